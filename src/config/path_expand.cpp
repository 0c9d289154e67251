#include "config/path_expand.h"
