// Which device each rank drives, from the capture's two utilisation samples and each rank's
// binding (collect::DeviceOfRank): a rank's own device idle while it runs, or busy while its
// peers' idle, is read beside its CPU and waits. Pure; any thread.
#pragma once

#include "capture/rank_report.h"

namespace trainwatch::capture {

// Sets each live rank's `device` where its binding names one that answered both samples and
// no other rank here names the same one (a shared device is no one rank's).
void AttachRankDevices(RankReport& report);

}  // namespace trainwatch::capture
