/* Links against an installed tabcl and checks the version agrees. */
#include <stdio.h>
#include <string.h>
#include <tabcl/tabcl.h>

int main(void) {
  if (tabcl_version_number() != TABCL_VERSION_NUMBER ||
      strcmp(tabcl_version_string(), TABCL_VERSION_STRING) != 0) {
    fprintf(stderr, "header %s, library %s\n", TABCL_VERSION_STRING, tabcl_version_string());
    return 1;
  }
  printf("tabcl %s: %s\n", tabcl_version_string(), tabcl_status_name(TABCL_OK));
  return 0;
}
