#include "capture/incident_redaction.h"

namespace trainwatch::capture {

void RedactFiring(const collect::Redactor& redactor, detect::Firing& firing,
                  collect::RedactionCounts& counts) {
  redactor.RedactText(firing.event.text, counts);
  redactor.RedactText(firing.event.summary, counts);
  redactor.RedactText(firing.event.frame, counts);  // a path may hold a user's token
  // Together: a key's BEGIN, body and END lines are separate context lines, and body lines
  // alone name nothing.
  redactor.RedactLines(firing.context, counts);
}

}  // namespace trainwatch::capture
