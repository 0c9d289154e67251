// Daemon logging: human lines on stderr, which systemd's journal and container runtimes
// collect; flushed per line so a crash of the daemon itself loses none.
#pragma once

namespace trainwatch {

void SetUpLogging();

}  // namespace trainwatch
