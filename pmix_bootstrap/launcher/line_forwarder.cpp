#include "line_forwarder.hpp"

namespace riseml::launch {

LineForwarder::LineForwarder(std::string prefix, Sink sink, std::size_t max_line)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), max_line_(max_line == 0 ? 1 : max_line) {}

void LineForwarder::append_line(std::string& batch, std::string_view line) const {
  batch += prefix_;
  batch += line;
  batch += '\n';
}

void LineForwarder::feed(std::string_view chunk) {
  std::string batch;
  while (!chunk.empty()) {
    std::size_t newline = chunk.find('\n');
    std::string_view piece = chunk.substr(0, newline);
    std::size_t room = max_line_ - partial_.size();
    if (piece.size() > room) {
      // Too long for one line: pass on what fits and keep going.
      partial_.append(piece.substr(0, room));
      append_line(batch, partial_);
      partial_.clear();
      chunk.remove_prefix(room);
      continue;
    }
    partial_.append(piece);
    if (newline == std::string_view::npos) break;
    append_line(batch, partial_);
    partial_.clear();
    chunk.remove_prefix(newline + 1);
  }
  if (!batch.empty()) sink_(batch);
}

void LineForwarder::finish() {
  if (partial_.empty()) return;
  std::string batch;
  append_line(batch, partial_);
  partial_.clear();
  sink_(batch);
}

}  // namespace riseml::launch
