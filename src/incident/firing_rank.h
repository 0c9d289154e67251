// Which rank a firing is about: the rank its line names as its subject (a rule's group
// `rank`: the straggler a report names), else the rank that wrote it: the prefix its launcher put
// on the line ("[rank3]:", mpirun's "[1,3]<stderr>:", srun's "3: "), else the rank its writers'
// environment names (a log per rank: RANK, OMPI_COMM_WORLD_RANK, ...), when every writer that names
// one names the same. A writer that exited before the firing (a crashed rank is gone by the time
// its traceback is judged complete) is looked up among the processes the sources remember. Loop
// thread only.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "detect/incident.h"
#include "source/writers.h"

namespace trainwatch::incident {

// `remembered`: the processes the sources know, asked only for a firing whose rank its line
// and live writers do not tell.
std::optional<int> RankOfFiring(
    const detect::Firing& firing,
    const std::function<std::vector<source::WriterProcess>()>& remembered);

}  // namespace trainwatch::incident
