#include "source/writer_scan.h"

#include <utility>

#include "core/uv_work.h"

namespace trainwatch::source {

void WriterScan::Request() {
  if (!*alive_) {
    return;
  }
  if (running_) {
    again_ = true;
    return;
  }
  std::set<FileId> files = files_();
  if (files.empty()) {
    return;
  }
  running_ = true;
  auto result = std::make_shared<Found>();
  std::shared_ptr<bool> alive = alive_;
  const int queued = QueueWork(
      loop_,
      [files = std::move(files), result] {
        *result = FindWriters(files);
        for (auto& [id, writers] : *result) {
          for (WriterProcess& writer : writers) {
            RememberProcess(writer);
          }
        }
      },
      [this, alive, result] {
        if (!*alive) {
          return;  // the owner is gone or stopping
        }
        running_ = false;
        if (std::exchange(again_, false)) {
          Request();
        }
        found_(*result);
      });
  if (queued != 0) {
    running_ = false;  // the next tick or new file asks again
  }
}

}  // namespace trainwatch::source
