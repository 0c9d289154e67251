#include "config/daemon_config.h"
