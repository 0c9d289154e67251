// Owning handles for Hyperscan's compiled databases and compile errors, so no caller frees
// one by hand. Hyperscan's types are only declared here: code outside core/ never includes
// <hs/hs.h> and never calls hs_* itself. Plain values; any thread.
#pragma once

#include <memory>

struct hs_database;
struct hs_compile_error;

namespace trainwatch {

struct HsDatabaseDeleter {
  void operator()(hs_database* db) const;
};
using HsDatabase = std::unique_ptr<hs_database, HsDatabaseDeleter>;

struct HsCompileErrorDeleter {
  void operator()(hs_compile_error* error) const;
};
using HsCompileError = std::unique_ptr<hs_compile_error, HsCompileErrorDeleter>;

}  // namespace trainwatch
