#include "source/writers.h"
