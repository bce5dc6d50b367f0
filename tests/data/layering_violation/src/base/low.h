// A lower layer that includes a higher one: layering_test.cmake must refuse it.
#include "mask/high.h"
