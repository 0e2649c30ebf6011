#include "refusal_log.hpp"

namespace riseml {

RefusalLog::RefusalLog(int rank, std::FILE* out, int shown_whole, Clock::duration interval)
    : rank_(rank), out_(out), shown_whole_(shown_whole), interval_(interval) {}

RefusalLog::~RefusalLog() {
  if (unreported_ > 0) summarize("during setup");
}

void RefusalLog::refused(const std::string& why) {
  ++total_;
  const auto now = Clock::now();
  if (total_ <= shown_whole_) {
    std::fprintf(out_, "riseml: rank %d refused a connection: %s\n", rank_, why.c_str());
    if (total_ == shown_whole_)
      std::fprintf(out_, "riseml: rank %d: further refused connections are counted, not shown one "
                         "by one\n", rank_);
    last_line_ = now;
    return;
  }
  ++unreported_;
  latest_ = why;
  if (now - last_line_ >= interval_) summarize("so far");
}

void RefusalLog::summarize(const char* when) {
  std::fprintf(out_, "riseml: rank %d refused %d more connection(s) %s (%d in all); the latest: %s\n",
               rank_, unreported_, when, total_, latest_.c_str());
  std::fflush(out_);
  unreported_ = 0;
  last_line_ = Clock::now();
}

}  // namespace riseml
