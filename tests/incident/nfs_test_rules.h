// Two rules for the tests of resolving lines: an NFS server not responding (a hang) and the
// same server's OK, which resolves it. The first capture group of each names the server.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "rules/rule_loader.h"

namespace trainwatch::incident {

inline std::vector<rules::Rule> NfsRules() {
  rules::LoadedRules loaded;
  rules::LoadRuleText(R"(rules:
  - id: storage.nfs_down
    kind: hang
    tags: [kmsg]
    description: The server is away
    pattern: '\bnfs: server (\S+) not responding'
    examples: {fires: ['nfs: server a not responding'], quiet: ['nfs: server a OK']}
  - id: storage.nfs_back
    resolves: storage.nfs_down
    tags: [kmsg]
    description: The server is back
    pattern: '\bnfs: server (\S+) OK'
    examples: {fires: ['nfs: server a OK'], quiet: ['nfs: server a not responding']}
)",
                      "nfs.yaml", loaded);
  EXPECT_TRUE(loaded.errors.empty());
  return loaded.rules;
}

}  // namespace trainwatch::incident
