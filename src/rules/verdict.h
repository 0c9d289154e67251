// Verdict: what a rule's firing means for whoever is woken by it — whose fault the failure is
// (`cause`) and what to do about it (`action`), as a rule file states them (rules/README.md,
// "Verdicts"). Both enums are in precedence order, lowest first: where an incident's firings
// disagree, the more specific cause wins (a device error outranks the timeouts it caused).
// Value types; any thread.
#pragma once

#include <optional>
#include <string_view>

namespace trainwatch::rules {

enum class Cause { kUnknown, kApplication, kInfrastructure, kDriver, kHardware };
// kRestartStorm is the retry policy's alone (incident/retry_policy.h: the job's attempts come
// faster than it can be helped); a rule file cannot state it.
enum class Action { kInspect, kRetry, kCancelRetries, kRebootNode, kExcludeNode, kRestartStorm };

std::string_view CauseName(Cause cause);
std::optional<Cause> ParseCause(std::string_view name);
std::string_view ActionName(Action action);
std::optional<Action> ParseAction(std::string_view name);

// The names a rule file may use, for messages: "hardware, driver, application, ...".
inline constexpr std::string_view kCauseNames =
    "hardware, driver, application, infrastructure, unknown";
inline constexpr std::string_view kActionNames =
    "retry, exclude_node, cancel_retries, reboot_node, inspect";

struct Verdict {
  Cause cause = Cause::kUnknown;
  Action action = Action::kInspect;
  bool operator==(const Verdict&) const = default;
};

// The part a rule's line plays in a failure of several ranks. A consequence is what a rank
// suffers from another's failure — a peer's "Connection closed by peer", "remote process
// exited", a collective's timeout, a watchdog tearing the process down; a report is a
// launcher or agent telling of a worker's failure — torchrun's ChildFailedError and exit-code
// lines, mp.spawn's re-raise, mpirun's and srun's notices, a worker's SIGTERM from its agent.
// Neither becomes the incident's summary or its first failing rank while some rank printed a
// primary error of its own; a consequence names the failure better than a report.
enum class Role { kPrimary, kConsequence, kReport };

std::string_view RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);
inline constexpr std::string_view kRoleNames = "primary, consequence, report";

}  // namespace trainwatch::rules
