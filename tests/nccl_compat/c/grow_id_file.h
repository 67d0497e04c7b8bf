/* The grow tests' hand-over of a grow id from rank 0 to the ranks that join: rank 0 writes it
 * (hex) to the file NCCL_TEST_GROW_FILE names, atomically (rename); the others poll for it.
 * Define _POSIX_C_SOURCE >= 199309L before including it (nanosleep). */
#pragma once

#include <time.h>

#include "nccl_test.h"

static void write_id(const ncclUniqueId* id) {
  const char* path = getenv("NCCL_TEST_GROW_FILE");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (f == NULL) exit(110);
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) fprintf(f, "%02x", (unsigned char)id->internal[i]);
  fclose(f);
  if (rename(tmp, path) != 0) exit(111);
}

static ncclUniqueId read_id(void) {
  const char* path = getenv("NCCL_TEST_GROW_FILE");
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  for (int tries = 0; tries < 6000; ++tries) { /* up to 60 s */
    FILE* f = fopen(path, "r");
    if (f != NULL) {
      for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
        unsigned v = 0;
        if (fscanf(f, "%2x", &v) != 1) exit(112);
        id.internal[i] = (char)v;
      }
      fclose(f);
      return id;
    }
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  exit(113);
}
