#include "detect/progress_parser.h"
