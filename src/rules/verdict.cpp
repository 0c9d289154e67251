#include "rules/verdict.h"

namespace trainwatch::rules {

std::string_view CauseName(Cause cause) {
  switch (cause) {
    case Cause::kUnknown:
      return "unknown";
    case Cause::kApplication:
      return "application";
    case Cause::kInfrastructure:
      return "infrastructure";
    case Cause::kDriver:
      return "driver";
    case Cause::kHardware:
      return "hardware";
  }
  return "unknown";
}

std::optional<Cause> ParseCause(std::string_view name) {
  for (Cause cause : {Cause::kUnknown, Cause::kApplication, Cause::kInfrastructure, Cause::kDriver,
                      Cause::kHardware}) {
    if (CauseName(cause) == name) {
      return cause;
    }
  }
  return std::nullopt;
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kPrimary:
      return "primary";
    case Role::kConsequence:
      return "consequence";
    case Role::kReport:
      return "report";
  }
  return "primary";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role role : {Role::kPrimary, Role::kConsequence, Role::kReport}) {
    if (RoleName(role) == name) {
      return role;
    }
  }
  return std::nullopt;
}

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kInspect:
      return "inspect";
    case Action::kRetry:
      return "retry";
    case Action::kCancelRetries:
      return "cancel_retries";
    case Action::kRebootNode:
      return "reboot_node";
    case Action::kExcludeNode:
      return "exclude_node";
    case Action::kRestartStorm:
      return "restart_storm";
  }
  return "inspect";
}

std::optional<Action> ParseAction(std::string_view name) {
  for (Action action : {Action::kInspect, Action::kRetry, Action::kCancelRetries,
                        Action::kRebootNode, Action::kExcludeNode}) {
    if (ActionName(action) == name) {
      return action;
    }
  }
  return std::nullopt;
}

}  // namespace trainwatch::rules
