// Reads the training loss a line already prints, in the shapes jobs print it: "loss = nan",
// "loss: 2.31", "loss=nan" (a tqdm postfix, Lightning), "'loss': nan" (HF Trainer's dicts),
// "| lm loss: 1.035E+01 |" (Megatron), "iter 425: loss nan" (nanoGPT), "train_loss=inf",
// "loss=tensor(nan, device='cuda:0')". Not "loss scale: 4096" (fp16's scaler), "val_loss" or
// other metrics whose names merely end in "loss". The step, where the line names one ("step
// 4", "iter 425", "iteration 10/ 100"), and whether the line tells an fp16 overflow the loss
// scaler skipped ("overflow", "skipping step"). Stateless; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::detect {

struct LossReading {
  double value = 0;  // NaN and ±inf as such
  bool finite = true;
  std::optional<std::int64_t> step;
  // Not finite, and the line says the step was skipped for an fp16 overflow.
  bool overflow = false;
};

// The first training loss `line` prints; nullopt when it prints none.
std::optional<LossReading> ReadLoss(std::string_view line);

// The value as the job wrote it, for a summary: "nan", "inf", "-inf", "2.31".
std::string LossText(double value);

// Whose line it is, in a log several ranks share: the launcher's prefix ("[rank3]:",
// "[default3]:", "[1,3]<stdout>:", "3: "); empty for a line without one.
std::string_view WriterPrefixOf(std::string_view line);

}  // namespace trainwatch::detect
