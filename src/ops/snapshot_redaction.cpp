#include "ops/snapshot_redaction.h"

#include <string>
#include <utility>

namespace trainwatch::ops {

void RedactBars(DaemonSnapshot& snapshot,
                const std::function<std::shared_ptr<const collect::Redactor>()>& redactor_of) {
  std::shared_ptr<const collect::Redactor> redactor;
  collect::RedactionCounts redacted;
  for (SourceSnapshot& source : snapshot.sources) {
    for (auto* streams : {&source.files, &source.streams}) {
      for (StreamSnapshot& stream : *streams) {
        for (BarSnapshot& bar : stream.bars) {
          if (!redactor) {
            redactor = redactor_of();
          }
          std::string label = bar.label;
          redactor->RedactText(label, redacted);
          if (label != bar.label) {
            // The key is made from the label, some digits spelled '#', which can hide a
            // secret's shape from the patterns: it is made again from the redacted label.
            bar.key.resize(bar.key.find(':') + 1);
            bar.key += label;
            bar.label = std::move(label);
          } else {
            redactor->RedactText(bar.key, redacted);
          }
        }
      }
    }
  }
}

}  // namespace trainwatch::ops
