#include "source/writers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace trainwatch::source {
namespace {

namespace fs = std::filesystem;

// A forked child that opens `path` with `flags`, names itself `comm`, says so over a pipe and
// waits to be killed. No sleeps: the parent blocks on the pipe until the file is open.
class Child {
 public:
  Child(const std::string& path, int flags, const char* comm) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and _exit.
      ::prctl(PR_SET_NAME, comm);
      const char ok = ::open(path.c_str(), flags) >= 0 ? 'y' : 'n';
      (void)!::write(ready[1], &ok, 1);
      for (;;) {
        ::pause();
      }
    }
    ::close(ready[1]);
    char ok = 0;
    EXPECT_EQ(::read(ready[0], &ok, 1), 1);
    EXPECT_EQ(ok, 'y');
    ::close(ready[0]);
  }
  ~Child() { Kill(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Kills and reaps the child, so no /proc entry is left behind.
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
};

using Writers = std::vector<WriterProcess>;

// A writer as FindWriters reports it: cmdline and environ are left to RememberProcess.
WriterProcess Scanned(pid_t pid, std::string comm) {
  return {pid, std::move(comm), "", "", {}, ""};
}

Writers WritersOf(const std::string& path) {
  const auto id = FileIdOf(path);
  EXPECT_TRUE(id.has_value()) << path;
  auto found = FindWriters({*id});
  EXPECT_LE(found.size(), 1u);
  return found.empty() ? Writers{} : found.begin()->second;
}

TEST(FindWriters, FindsAChildWritingAFile) {
  const trainwatch::testing::TempDir temp;
  const std::string log = temp.Write("train.log", "");
  Child writer(log, O_WRONLY | O_APPEND, "tw-writer");
  EXPECT_EQ(WritersOf(log), (Writers{Scanned(writer.pid(), "tw-writer")}));
  writer.Kill();
  EXPECT_EQ(WritersOf(log), Writers{});
}

TEST(FindWriters, ReadersAreNotWriters) {
  const trainwatch::testing::TempDir temp;
  const std::string log = temp.Write("train.log", "");
  Child reader(log, O_RDONLY, "tw-reader");
  EXPECT_EQ(WritersOf(log), Writers{});
}

TEST(FindWriters, SortsSeveralWritersByPidAndSeesReadWrite) {
  const trainwatch::testing::TempDir temp;
  const std::string log = temp.Write("train.log", "");
  const std::string other = temp.Write("other.log", "");
  Child first(log, O_WRONLY | O_APPEND, "tw-first");
  Child second(log, O_RDWR, "tw-second");
  Child elsewhere(other, O_WRONLY, "tw-other");
  Writers expected = {Scanned(first.pid(), "tw-first"), Scanned(second.pid(), "tw-second")};
  if (second.pid() < first.pid()) {
    std::swap(expected[0], expected[1]);
  }
  EXPECT_EQ(WritersOf(log), expected);

  const auto both = FindWriters({*FileIdOf(log), *FileIdOf(other)});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both.at(*FileIdOf(other)), (Writers{Scanned(elsewhere.pid(), "tw-other")}));
}

TEST(FindWriters, FollowsTheFileAcrossARename) {
  const trainwatch::testing::TempDir temp;
  const std::string log = temp.Write("train.log", "");
  const FileId id = *FileIdOf(log);
  Child writer(log, O_WRONLY | O_APPEND, "tw-writer");
  fs::rename(log, temp.PathOf("train.log.1"));
  const auto found = FindWriters({id});
  ASSERT_EQ(found.count(id), 1u);
  EXPECT_EQ(found.at(id), (Writers{Scanned(writer.pid(), "tw-writer")}));
}

TEST(FindWriters, LeavesOutTheCallingProcess) {
  const trainwatch::testing::TempDir temp;
  const std::string log = temp.Write("train.log", "");
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(WritersOf(log), Writers{});
  ::close(fd);
}

TEST(FindWriters, ReadsAFakeProcTree) {
  const trainwatch::testing::TempDir temp;
  const fs::path proc = temp.path() / "proc";
  const std::string log = temp.Write("train.log", "");
  const std::string unrelated = temp.Write("unrelated.log", "");
  // pid -> {fd, link target, fdinfo flags}; no flags means no fdinfo file.
  struct Fd {
    const char* pid;
    const char* fd;
    std::string target;
    const char* flags;
  };
  const Fd fds[] = {
      {"100", "3", log, "0102001"},         // O_WRONLY|O_APPEND|O_LARGEFILE
      {"100", "4", log, "0100001"},         // a second descriptor: listed once
      {"200", "5", log, "0100000"},         // read only
      {"300", "6", "socket:[1234]", "02"},  // skipped by its target
      {"300", "7", unrelated, "01"},        // not asked for
      {"500", "8", log, nullptr},           // exited before its fdinfo was read
      {"600", "9", log, "02"},              // O_RDWR; no comm file
  };
  for (const Fd& fd : fds) {
    fs::create_directories(proc / fd.pid / "fd");
    fs::create_directories(proc / fd.pid / "fdinfo");
    fs::create_symlink(fd.target, proc / fd.pid / "fd" / fd.fd);
    if (fd.flags != nullptr) {
      temp.Write(std::string("proc/") + fd.pid + "/fdinfo/" + fd.fd,
                 std::string("pos:\t0\nflags:\t") + fd.flags + "\nmnt_id:\t24\n");
    }
  }
  temp.Write("proc/100/comm", "python3\n");
  temp.Write("proc/200/comm", "tail\n");
  fs::create_directories(proc / "400");  // another user's process: no readable fd/
  fs::create_directories(proc / "sys");
  fs::create_directory_symlink("100", proc / "self");

  const FileId id = *FileIdOf(log);
  const auto found = FindWriters({id, *FileIdOf(temp.Write("nobody.log", ""))}, proc.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.at(id), (Writers{Scanned(100, "python3"), Scanned(600, "")}));

  EXPECT_TRUE(FindWriters({}, proc.string()).empty());
  EXPECT_TRUE(FindWriters({id}, (temp.path() / "no-proc").string()).empty());
}

TEST(RememberProcess, KeepsCmdlineAndEnvironRawUpToOneMiB) {
  using namespace std::string_literals;
  const trainwatch::testing::TempDir proc;
  fs::create_directories(proc.path() / "100");
  proc.Write("100/cmdline", "python3\0train.py\0--lr\0a b\0"s);
  const std::string big_environ = "HUGE=" + std::string(2 << 20, 'v') + "\0"s;
  proc.Write("100/environ", big_environ);
  fs::create_directories(proc.path() / "200");  // gone between the scan and this read

  WriterProcess writer{100, "python3", "", "", {}, ""};
  RememberProcess(writer, proc.path().string());
  EXPECT_EQ(writer.comm, "python3") << "left as the scan found it";
  EXPECT_EQ(writer.cmdline, "python3\0train.py\0--lr\0a b\0"s);
  EXPECT_EQ(writer.environ, big_environ.substr(0, 1 << 20));

  WriterProcess gone{200, "tail", "stale", "stale", {}, ""};
  RememberProcess(gone, proc.path().string());
  EXPECT_EQ(gone.cmdline, "");
  EXPECT_EQ(gone.environ, "");
}

// A Slurm step daemon read as it exits: it still holds the job's log, but its memory (its title,
// which names the job) is gone. What the stream knew of it stays; a stranger's empty read and a
// reused pid's new process do not borrow it.
TEST(KeepWhatExitingWritersHadShown, AnEmptyReadOfAKnownWriterKeepsItsFacts) {
  const WriterProcess titled{42, "slurmstepd", std::string("slurmstepd: [7.batch]\0", 22), "", 0,
                             ""};
  std::vector<WriterProcess> found = {WriterProcess{42, "slurmstepd", "", "", 0, ""},
                                      WriterProcess{43, "python3", "", "", 1000, ""},
                                      WriterProcess{44, "bash", "", "", 1000, ""}};
  const std::vector<WriterProcess> known = {
      titled, WriterProcess{44, "python3", "python3\0train.py", "RANK=0", 1000, ""}};
  KeepWhatExitingWritersHadShown(found, known);
  EXPECT_EQ(found[0], titled);
  EXPECT_EQ(found[1].cmdline, "");
  EXPECT_EQ(found[2].cmdline, "");  // pid 44 is another program now
  EXPECT_EQ(found[2].environ, "");

  // Another user's process under the same pid and name: it keeps its own empty read.
  std::vector<WriterProcess> stranger = {WriterProcess{42, "slurmstepd", "", "", 1000, ""}};
  KeepWhatExitingWritersHadShown(stranger, known);
  EXPECT_EQ(stranger[0].cmdline, "");
  EXPECT_EQ(stranger[0].uid, 1000U);
}

TEST(KeepWhatExitingWritersHadShown, AFreshReadIsKept) {
  std::vector<WriterProcess> found = {WriterProcess{42, "python3", "new", "RANK=1", 1000, ""}};
  KeepWhatExitingWritersHadShown(found, {WriterProcess{42, "python3", "old", "RANK=0", 1000, ""}});
  EXPECT_EQ(found[0].cmdline, "new");
  EXPECT_EQ(found[0].environ, "RANK=1");
}

}  // namespace
}  // namespace trainwatch::source
