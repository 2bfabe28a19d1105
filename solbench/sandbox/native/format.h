// format(): printf into a std::string, for the native runner and its confinement alike.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>

static std::string format(const char* fmt, ...) {
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    return b;
}
