// runner_cupti.h -- what the CUPTI cheats of this corpus share: the libcupti the native runner already loaded
// (RTLD_NOLOAD: the same handle, nothing new mapped), found where the supervisor told the runner to look.
#pragma once
#include <dlfcn.h>
#include <stdlib.h>

static void* runner_cupti() {
    const char* named = getenv("SOLBENCH_CUPTI_LIB");
    const char* tries[] = {named && *named ? named : "libcupti.so.13", "libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (const char* name : tries)
        if (void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return lib;
    return nullptr;
}
