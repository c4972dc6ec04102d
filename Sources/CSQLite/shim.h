// SQLite 3, the system library (Debian's libsqlite3-dev), for the download manager's list.
#ifndef FASTPULL_CSQLITE_SHIM_H
#define FASTPULL_CSQLITE_SHIM_H

#include <sqlite3.h>

/// sqlite3_bind_text with SQLITE_TRANSIENT (SQLite copies the text), a macro Swift cannot import.
static inline int fp_sqlite3_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

#endif
