/* evt/evt.h — everything: the IR, the .evt front end, the compiler, the
 * runtime and the tile operators. Start with docs/c-api.md. */
#ifndef EVT_EVT_H
#define EVT_EVT_H
#include "evt/ir.h"
#include "evt/front.h"
#include "evt/compile.h"
#include "evt/runtime.h"
#include "evt/tiles.h"
#endif
