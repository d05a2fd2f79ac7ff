/* What tune/tune_db.c shares with the other files of tune/ that read the
 * tuning database directly (tune_report.c): the connection and the status
 * helper for SQLite's errors. Not part of the public interface. */
#ifndef XCOMP_TUNE_DB_INTERNAL_H
#define XCOMP_TUNE_DB_INTERNAL_H

#include <sqlite3.h>

#include "xcomp/tune.h"

struct xc_tune_db {
  sqlite3* sql;
  char* path; /* for messages */
};

/* An error status for a failed SQLite call on db: "<path>: <what>: <SQLite's
 * message>", the code from SQLite's (a damaged or foreign file is
 * XC_DATA_LOSS, a full disk or locked file XC_IO). */
xc_status_t xc_tune_db_sql_error(xc_tune_db_t* db, int rc, const char* what);

/* Prepares sql on db's connection (*out NULL on error). */
xc_status_t xc_tune_db_prepare(xc_tune_db_t* db, const char* sql, sqlite3_stmt** out);

#endif
