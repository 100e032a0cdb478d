// Symbol export for libmt_core.so: everything is hidden by default (-fvisibility=hidden);
// MT_API marks what plugins and tools may call.
#pragma once

#define MT_API __attribute__((visibility("default")))
