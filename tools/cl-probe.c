/* placeholder, replaced by the full report */
#include <stdio.h>
#include "tabcl/tabcl.h"
int main(void) { printf("%s\n", tabcl_version_string()); return 0; }
