#include "core/hyperscan_handles.h"

#include <hs/hs.h>

namespace trainwatch {

void HsDatabaseDeleter::operator()(hs_database* db) const { hs_free_database(db); }

void HsCompileErrorDeleter::operator()(hs_compile_error* error) const {
  hs_free_compile_error(error);
}

}  // namespace trainwatch
