#include "source/writer_scan.h"

#include <utility>

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
  env_.RunOnPool(
      [files = std::move(files), result, proc_root = env_.proc_root()] {
        *result = FindWriters(files, proc_root);
        for (auto& [id, writers] : *result) {
          for (WriterProcess& writer : writers) {
            RememberProcess(writer, proc_root);
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
}

}  // namespace trainwatch::source
