// cupti_lite.h -- the few CUPTI activity and callback calls the native runner uses, resolved with dlopen at
// run time, so the runner builds and runs where CUPTI is missing (it then says so in its description) and
// never links a profiling library into a candidate's process by default.
#pragma once
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#define SOLBENCH_HAVE_CUPTI 1

struct CuptiApi {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
    CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
    CUptiResult (*flush_all)(uint32_t) = nullptr;
    CUptiResult (*get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
    CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
    CUptiResult (*callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;  // optional
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t*) = nullptr;  // optional
    CUptiResult (*timestamp)(uint64_t*) = nullptr;  // optional: the activity records' clock, read on the host
};

// "" when every entry point was found in the library named by $SOLBENCH_CUPTI_LIB (or the usual names).
inline std::string load_cupti(CuptiApi* api) {
    const char* named = getenv("SOLBENCH_CUPTI_LIB");
    const char* tries[] = {named && *named ? named : "libcupti.so.13", "libcupti.so.13", "libcupti.so"};
    void* lib = nullptr;
    for (const char* name : tries)
        if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return std::string("libcupti not found (") + (named && *named ? named : "libcupti.so.13") + ")";
    api->register_callbacks = (decltype(api->register_callbacks))dlsym(lib, "cuptiActivityRegisterCallbacks");
    api->enable = (decltype(api->enable))dlsym(lib, "cuptiActivityEnable");
    api->flush_all = (decltype(api->flush_all))dlsym(lib, "cuptiActivityFlushAll");
    api->get_next_record = (decltype(api->get_next_record))dlsym(lib, "cuptiActivityGetNextRecord");
    api->subscribe = (decltype(api->subscribe))dlsym(lib, "cuptiSubscribe");
    api->enable_callback = (decltype(api->enable_callback))dlsym(lib, "cuptiEnableCallback");
    api->callback_name = (decltype(api->callback_name))dlsym(lib, "cuptiGetCallbackName");
    api->dropped = (decltype(api->dropped))dlsym(lib, "cuptiActivityGetNumDroppedRecords");
    api->timestamp = (decltype(api->timestamp))dlsym(lib, "cuptiGetTimestamp");
    if (!api->register_callbacks || !api->enable || !api->flush_all || !api->get_next_record ||
        !api->subscribe || !api->enable_callback)
        return "libcupti lacks the activity or callback API";
    return "";
}
#else
#define SOLBENCH_HAVE_CUPTI 0
#endif
