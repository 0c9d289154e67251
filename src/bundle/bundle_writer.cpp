#include "bundle/bundle_writer.h"
