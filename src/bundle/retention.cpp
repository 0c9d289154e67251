#include "bundle/retention.h"
