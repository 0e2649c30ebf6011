#include "allocation_nodes.hpp"

#include "piped_child.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace riseml::elastic {

std::vector<std::string> allocation_nodes(const std::string& nodelist) {
  // No shell: the list goes to scontrol as one argument, whatever it holds.
  const PipedChild child = start_piped({"scontrol", "show", "hostnames", nodelist}, {}, false);
  const int output = child.output;
  const pid_t pid = child.pid;
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(output, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > (1 << 22)) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(output);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("`scontrol show hostnames " + nodelist + "` failed (" +
                             (WIFEXITED(status) && WEXITSTATUS(status) == 127
                                  ? std::string("scontrol not found on PATH")
                                  : "status " + std::to_string(status)) + ")");
  std::vector<std::string> nodes;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    if (nl > at) nodes.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  if (nodes.empty()) throw std::runtime_error("scontrol listed no nodes for '" + nodelist + "'");
  return nodes;
}

}  // namespace riseml::elastic
