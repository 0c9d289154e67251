#include "collect/system_collectors.h"
