// The line grammar TracebackGrouper reads Python tracebacks with: which line is a final
// exception, a frame or a "survived" marker, which part of a prefix names its writer, and
// how a prefix with a ticking clock matches the next line's. Split from
// traceback_grouper.cpp, which decides what these lines mean together. Pure; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace trainwatch::detect {

// Whether `prefix` holds a time of day, whose digits tick from line to line.
bool HasClock(std::string_view prefix);

// Matches `text` against `prefix`, where each run of digits inside the prefix's clock span
// may differ in value and length (timestamps tick; trailing zeros may be trimmed) and
// everything else must be equal. Returns how much of `text` the prefix covers.
std::optional<std::size_t> ClockPrefixLength(std::string_view prefix, std::string_view text);

// The part of a header's prefix that names its writer: "[rank0]:", "gpu250:",
// "[1,0]<stderr>:", a timestamp and logger. Empty when the prefix is only other output the
// header was glued to (a progress bar), which says nothing about the writer.
std::string_view WriterTag(std::string_view prefix);

// The line Python ends a traceback with: "RuntimeError: ...", "KeyboardInterrupt",
// "torch.cuda.OutOfMemoryError: ...", "socket.gaierror: [Errno -2] ...",
// "numpy.core._exceptions._ArrayMemoryError: ...". A bare word counts only when it reads
// like an exception class ("Exiting" does not); "Name: text" counts when the name is dotted,
// CamelCase or ends like an exception, and never when it is all capitals ("WARNING:torch").
bool IsExceptionLine(std::string_view body);

// Python prints these before a traceback it survives. They may be glued to a progress bar
// ("2.16it/s]Exception ignored in: ...") or sit a line or two above the header when several
// DataLoader workers print at once, so they are searched for anywhere in the line.
bool HasSurvivedMarker(std::string_view line);

// A header glued onto a frame line ('  File "x.py", line 3, in fTraceback (most recent...')
// only happens when several threads or processes print tracebacks at once.
bool IsFrameLine(std::string_view text);

// Where the header pattern matched a final exception line rather than a header: the match
// starts with a (dotted) class name ending the line or followed by ':'
// ("torch.distributed.DistBackendError: ...", "MemoryError"). "Traceback (most recent..."
// has a space after its first word.
bool IsExceptionAt(std::string_view rest);

// A lone exception line counts only at the start of a line or after a writer's tag
// ("[rank0]: ", "gpu3: "): in the middle of a log message it is a message about an exception.
bool IsWriterPrefix(std::string_view prefix);

}  // namespace trainwatch::detect
