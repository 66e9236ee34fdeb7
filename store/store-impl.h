/* store-impl — private details of the run database shared by the store sources. */
#ifndef FA_STORE_IMPL_H
#define FA_STORE_IMPL_H

#include <sqlite3.h>

#include "store.h"

/* application_id of a fuse-advise run database: the bytes 'F','A','d','v'. */
#define FA_STORE_APPLICATION_ID 0x46416476

/* fa_store_migrations[v]: SQL taking user_version v to v+1 (store/schema.c). */
extern const char *const fa_store_migrations[FA_STORE_SCHEMA_VERSION];

struct fa_store {
    sqlite3 *db;
    char *path;      /* as given to open */
    bool readonly;   /* opened read-only */
    bool explicit_tx;/* inside fa_store_begin .. commit/rollback */
};

#endif
