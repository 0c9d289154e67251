// ParseProgress: reads one segment of training output (the text between '\r' and '\n') and
// returns the progress it shows, if any: a tqdm bar (also PyTorch Lightning's and the HF
// Trainer's), a Keras progress bar, or a step line of a training loop or framework ("step 120
// loss 0.31", Megatron's "iteration 10/ 500000 |", "Train Epoch: 3 [1280/60000 (2%)]").
// Pure functions without state (the stall detector keeps each bar's state by `key`); any thread.
//
// Keys name a bar within one stream:
// - "tqdm:" + the text before the bar. Digit runs in the bar's own desc become '#', so
//   "Epoch 0" and "Epoch 1" are one bar whose count restarts each epoch. The writer prefix in
//   front of the desc (bracketed groups at the start, and everything up to the last ": ":
//   "[rank3]: ", "(pid=63079)", "gpu250: ") keeps its digits, so each rank's bar stays its
//   own, except dates and times in it ("2024-01-02 12:34:56,789"), which tick and become '#'.
//   A bar without desc is "tqdm:".
// - "keras:" for Keras bars (Keras draws one at a time); its "Epoch 1/10" headers give nothing.
// - "step:" for step lines, whichever word (step, iter, iteration, global_step) they use.
// When unsure the parser gives nothing: a false update can hide a hang, while a missed one only
// leaves the detector to the other bars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::detect {

struct ProgressUpdate {
  std::string key;  // identifies the bar within one stream (see above)
  // For status output: a tqdm desc as printed, writer prefix included ("[rank3]: Epoch 1"),
  // "keras", "step", or "" for a bare tqdm bar.
  std::string label;
  std::int64_t count = 0;  // steps done; unit_scale counts expanded (1.23k -> 1230), rounded down
  std::optional<std::int64_t> total;  // when the output shows one
  bool Complete() const { return total && count >= *total; }
};

// One segment (no '\r' or '\n' inside) -> the update it shows, if any. Never throws on any
// input. Terminal codes (ANSI escapes, Keras' '\b' rewinds) are ignored.
std::optional<ProgressUpdate> ParseProgress(std::string_view segment);

// Where the writer prefix in front of a tqdm desc ends: after bracketed groups at the start
// ("[rank3]: ", "(pid=63079)") and after the last ": " ("gpu250: Epoch 1"). The part of a bar's
// key that keeps its digits.
std::size_t WriterPrefixLength(std::string_view left);

// Whether a segment announces a phase in which the training bar rightly stands still: a
// checkpoint save (HF Trainer's "Saving model checkpoint to", DeepSpeed's "Checkpoint
// global_step100 is about to be saved!", Megatron's "saving checkpoint at iteration",
// Lightning's "saving model to") or an evaluation ("***** Running Evaluation *****",
// "Running validation", "Evaluating").
bool IsPhaseMarker(std::string_view segment);

}  // namespace trainwatch::detect
