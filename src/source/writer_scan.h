// WriterScan: finds which processes write the followed files (a walk of every process's
// /proc/PID/fd, below the Env's /proc root) on the thread pool, since it takes milliseconds; one
// scan at a time, and a request made while one runs starts one more when it ends (files came after
// it began). What each writer is (comm, command line, environment) is read there too, while it
// lives. Loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/env.h"
#include "source/file_id.h"
#include "source/writers.h"

namespace trainwatch::source {

class WriterScan {
 public:
  using Found = std::map<FileId, std::vector<WriterProcess>>;
  // `files` says what to look for, asked at the start of each scan; `found` gets the result on
  // the loop thread.
  WriterScan(Env& env, std::function<std::set<FileId>()> files,
             std::function<void(const Found& found)> found)
      : env_(env), files_(std::move(files)), found_(std::move(found)) {}
  ~WriterScan() { Stop(); }
  WriterScan(const WriterScan&) = delete;
  WriterScan& operator=(const WriterScan&) = delete;

  void Request();
  // No more results are delivered (a scan under way finishes on its thread, unseen).
  void Stop() { *alive_ = false; }
  bool running() const { return running_; }

 private:
  Env& env_;
  std::function<std::set<FileId>()> files_;
  std::function<void(const Found&)> found_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool running_ = false;
  bool again_ = false;
};

}  // namespace trainwatch::source
