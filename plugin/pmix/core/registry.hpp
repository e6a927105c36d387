// What the server knows: the jobs the launcher registered, the clients it
// expects (and their secrets), and each client's committed data. Sans I/O.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "value.hpp"

namespace plugin::pmix::core {

struct Client {
    ProcName proc{};
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::uint64_t secret = 0;     // handed to the child by setup_fork
    void* host_object = nullptr;  // the launcher's handle (orte_proc_t*)
    bool connected = false;
    bool finalized = false;
    bool committed = false;
    KvList local;   // visible to processes on this node (LOCAL + GLOBAL)
    KvList remote;  // visible to processes elsewhere (REMOTE + GLOBAL)
};

struct Job {
    std::uint32_t nlocal = 0;
    std::vector<Record> records;  // {job, wildcard} first, then one per process
};

// Splits what register_nspace hands over into the job-level record and one
// record per process: every List value whose key is `pdata_key` holds one
// process's data, its rank under `rank_key` (a Name or Scalar).
std::vector<Record> job_records(std::uint32_t jobid, const KvList& info, std::string_view pdata_key,
                                std::string_view rank_key);

// Merges `add` into `into`: a key already present is replaced.
void merge(KvList& into, const KvList& add);

class Registry {
  public:
    // Registration again (the launcher does it for spawn/connect) replaces
    // the job's data and keeps its clients and their state.
    void add_job(std::uint32_t jobid, std::uint32_t nlocal, std::vector<Record> records);
    // Forgets the job and its clients.
    void remove_job(std::uint32_t jobid);
    const Job* job(std::uint32_t jobid) const;

    Client& add_client(ProcName proc, std::uint32_t uid, std::uint32_t gid, void* host_object);
    void remove_client(ProcName proc);
    Client* client(ProcName proc);
    const Client* client(ProcName proc) const;
    std::size_t clients() const noexcept { return clients_.size(); }

    // A connecting process proves it is the child we forked: registered, in
    // a registered job, the secret from its environment, and not already
    // connected. (Its uid was checked when it connected: peer.hpp.)
    Result<Client*> authenticate(ProcName proc, std::uint64_t secret);

    // Stores a commit, split by scope.
    static void commit(Client& c, const KvList& values);

    // The local clients that take part in a collective over `procs`
    // ({job, wildcard} = every local client of that job), sorted.
    std::vector<ProcName> local_members(std::span<const ProcName> procs) const;

  private:
    std::map<std::uint32_t, Job> jobs_;
    std::map<ProcName, Client> clients_;
};

}  // namespace plugin::pmix::core
