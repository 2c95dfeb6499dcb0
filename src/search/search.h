/* search.h - the search layer's private interface (index, skin). */
#ifndef NS_SEARCH_H
#define NS_SEARCH_H

#include "kernel.h"

/* Sets the contact limit of an index's next builds (for ns_skin, which
 * searches candidates and contacts with different limits); 0 = the default. */
void ns__index_set_max_contacts(ns_index *index, size_t max_contacts);

#endif /* NS_SEARCH_H */
