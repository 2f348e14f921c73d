// (a) the bar: <range/v3/all.hpp> alone.
#include <range/v3/all.hpp>
