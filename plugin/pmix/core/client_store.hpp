// The client's view of the job's data: its own puts, what the server sent
// (job data, fence results, direct-modex replies) and the local stores ORTE
// makes. Implements the lookup order and the "ask the server or not" rule
// of get. Sans I/O.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "value.hpp"

namespace plugin::pmix::core {

enum class GetAction {
    Found,      // in the cache
    NotFound,   // answer "not found" now
    AskServer,  // a request to the server may still find it
};

class ClientStore {
  public:
    // One key for one process (puts, store_local): replaces the old value.
    void put(ProcName proc, KeyValue kv);
    // Everything the server sent about one process. `complete`: this is all
    // the process will ever publish (a collecting fence, a dmodex reply).
    void ingest(const Record& rec, bool complete);
    void mark_job_known(std::uint32_t jobid) { jobs_.insert(jobid); }
    bool job_known(std::uint32_t jobid) const { return jobs_.contains(jobid); }

    // A process's key, else its job's key of that name.
    const Value* find(ProcName proc, std::string_view key) const;

    // What get should do about a key it did not find. `optional`: the caller
    // takes "not found" as an answer (OPAL_PMIX_OPTIONAL).
    GetAction miss(ProcName proc, bool optional) const;

  private:
    std::map<ProcName, std::map<std::string, Value, std::less<>>> data_;
    std::set<ProcName> complete_;
    std::set<std::uint32_t> jobs_;
};

}  // namespace plugin::pmix::core
