// RefreshHead: what tells one tqdm bar's refreshes apart, read cheaply (one search for "%|"),
// so that of a run of one bar's refreshes read at one moment only the last is parsed
// (StreamDetector::ParseProgress). A bar written to a file holds tens of refreshes a line, most
// of a training log's bytes: parsing each was half the daemon's CPU under bench/daemon's load.
// Pure; any thread.
#pragma once

#include <optional>
#include <string_view>

namespace trainwatch::detect {

// A whole refresh's writer prefix and desc before its percentage ("[rank3]: " and "Epoch 1" of
// "[rank3]: Epoch 1:  45%|████▌     | 45/100 [00:09<00:11, 4.9it/s]"), and the percentage.
struct RefreshHead {
  std::string_view prefix;
  std::string_view desc;
  int percent = 0;
};

// Nothing unless the segment is a whole refresh with a percentage (it ends with tqdm's ']')
// and without terminal codes (those are parsed: ParseProgress strips them first).
std::optional<RefreshHead> HeadOfRefresh(std::string_view segment);
// One bar, as its key says: the writer prefix as written, the desc's numbers alike
// (`set_description(f"Epoch {e} loss {l:.3f}")` is one bar).
bool SameBar(const RefreshHead& a, const RefreshHead& b);
// Whether `later`, the next refresh on the same line, makes parsing `earlier` pointless: the
// same bar, and it did not go back (the percentage did not drop: a bar started again is parsed,
// so the tracker sees it restart).
bool Supersedes(const RefreshHead& later, const RefreshHead& earlier);

}  // namespace trainwatch::detect
