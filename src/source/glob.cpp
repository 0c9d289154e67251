#include "source/glob.h"
