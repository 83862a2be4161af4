// Tests of llm/http: written with the backends work.
#include <gtest/gtest.h>
