/* Compiled against the live SDK headers with the assertions abi_layout_gen
 * wrote from the frozen v1.0, v1.1 and v1.2 headers: it builds only while every
 * field of those minors keeps its offset and size, no struct shrinks and no
 * enum value is renumbered. Running it reports how many checks the build
 * made. */
#include <stddef.h>
#include <stdio.h>

#include "cairn/plugin.h"

#include "abi_v1_0_layout.h"
#include "abi_v1_1_layout.h"
#include "abi_v1_2_layout.h"

int main(void)
{
    int fields = 0, enums = 0, structs = 0;
#define ABI_STRUCT(s) structs++;
#define ABI_FIELD(s, f) fields++;
#define ABI_ENUM(e) enums++;
#include "abi_v1_0.def"
    printf("ABI v1.0 layout holds in the live headers: %d structs, %d fields, %d enum values\n", structs, fields,
           enums);
    int v10_structs = structs;
    structs = fields = enums = 0;
#include "abi_v1_1.def"
    printf("ABI v1.1 layout holds in the live headers: %d structs, %d fields, %d enum values\n", structs, fields,
           enums);
    int v11_structs = structs;
    structs = fields = enums = 0;
#include "abi_v1_2.def"
    printf("ABI v1.2 layout holds in the live headers: %d structs, %d fields, %d enum values\n", structs, fields,
           enums);
    return v10_structs > 0 && v11_structs > v10_structs && structs > v11_structs && fields > 0 && enums > 0 ? 0 : 1;
}
