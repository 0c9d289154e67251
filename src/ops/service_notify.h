// Telling the service manager how the daemon is (sd_notify(3)'s protocol): "READY=1",
// "STATUS=...", "WATCHDOG=1", "STOPPING=1" as datagrams to the AF_UNIX socket in
// $NOTIFY_SOCKET, and the watchdog interval from $WATCHDOG_USEC (for this process when
// $WATCHDOG_PID says so). systemd documents the protocol as a stable interface and shows a
// standalone sender in sd_notify(3); libsystemd, which sent these before, cost every daemon
// ~1 MiB of resident memory for the libraries it loads (libgcrypt, libgpg-error, liblz4,
// liblzma, libzstd, libcap), which a watcher on every node should not pay for two calls.
// Stateless; any thread. Blocks only while the manager's queue is full, half a second at most.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace trainwatch::ops {

// Sends `state` ("READY=1", "STATUS=watching 3 files") to the service manager. False when
// there is none ($NOTIFY_SOCKET unset or empty) or the datagram could not be sent.
bool NotifyServiceManager(std::string_view state);

// How often the service manager wants "WATCHDOG=1": $WATCHDOG_USEC, when set, positive, and
// $WATCHDOG_PID (if set) is this process; nullopt otherwise.
std::optional<std::chrono::microseconds> WatchdogInterval();

}  // namespace trainwatch::ops
