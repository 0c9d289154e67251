#include "collect/redactor.h"
