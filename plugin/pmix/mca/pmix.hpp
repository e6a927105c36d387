// pmix dr: the module's shared state and the entry points of its two halves
// (server.cpp in mpirun/orted, client.cpp in MPI processes).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "client_store.hpp"
#include "convert.hpp"
#include "opal_log.hpp"
#include "opal_prelude.hpp"

extern "C" {
extern opal_pmix_base_component_t mca_pmix_dr_component;
}

namespace plugin::pmix::mca {

using plugin::common::logf;
using plugin::common::LogLevel;

// Environment the server hands every child (setup_fork).
inline constexpr const char* kEnvUri = "DR_PMIX_SERVER_URI";  // socket path
inline constexpr const char* kEnvProc = "DR_PMIX_PROC";       // "<jobid>.<vpid>" decimal
inline constexpr const char* kEnvSecret = "DR_PMIX_SECRET";   // 16 hex digits

struct Params {
    int verbose = 0;
    unsigned max_msg_size_mb = 64;  // largest message either side accepts
    unsigned get_timeout_s = 60;    // a get waiting for a commit or a remote daemon
    unsigned max_pending = 4096;    // parked gets per server
    bool check_peer_uid = true;     // SO_PEERCRED policy (core/peer.hpp) on both ends
    unsigned hello_timeout_s = 10;  // a new connection must say Hello within it (0: no limit)
};

struct State {
    Params params;
    plugin::common::OpalLogSink log;
    // Keys stored by ORTE (store_local), our own puts, and all data the
    // server sent: the lookups of get, in servers and clients alike.
    std::mutex store_mu;
    core::ClientStore store;
    // get_nspace must return a string that stays valid.
    std::mutex nspace_mu;
    std::map<std::uint32_t, std::string> nspaces;
    std::size_t max_msg() const noexcept { return std::size_t{params.max_msg_size_mb} << 20; }
};
State& state() noexcept;

int register_params() noexcept;

// Shared by both halves: the local key/value store.
int store_local(const opal_process_name_t* proc, opal_value_t* val) noexcept;
// A copy of a stored value, or nullptr.
opal_value_t* lookup_local(ProcName proc, const char* key);

// Client half.
namespace client {
int init(opal_list_t* ilist) noexcept;
int finalize() noexcept;
int initialized() noexcept;
int abort(int status, const char* msg, opal_list_t* procs) noexcept;
int commit() noexcept;
int fence(opal_list_t* procs, int collect) noexcept;
int fence_nb(opal_list_t* procs, int collect, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
int put(opal_pmix_scope_t scope, opal_value_t* val) noexcept;
int get(const opal_process_name_t* proc, const char* key, opal_list_t* info,
        opal_value_t** val) noexcept;
int publish(opal_list_t* info) noexcept;
int publish_nb(opal_list_t* info, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
int lookup(opal_list_t* data, opal_list_t* info) noexcept;
int lookup_nb(char** keys, opal_list_t* info, opal_pmix_lookup_cbfunc_t cb, void* cbdata) noexcept;
int unpublish(char** keys, opal_list_t* info) noexcept;
int unpublish_nb(char** keys, opal_list_t* info, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
int spawn(opal_list_t* job_info, opal_list_t* apps, opal_jobid_t* jobid) noexcept;
int spawn_nb(opal_list_t* job_info, opal_list_t* apps, opal_pmix_spawn_cbfunc_t cb,
             void* cbdata) noexcept;
int connect(opal_list_t* procs) noexcept;
int connect_nb(opal_list_t* procs, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
void register_evhandler(opal_list_t* codes, opal_list_t* info, opal_pmix_notification_fn_t handler,
                        opal_pmix_evhandler_reg_cbfunc_t cb, void* cbdata) noexcept;
void deregister_evhandler(size_t ref, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
}  // namespace client

// Server half.
namespace server {
int init(opal_pmix_server_module_t* host, opal_list_t* info) noexcept;
int finalize() noexcept;
int register_nspace(opal_jobid_t jobid, int nlocalprocs, opal_list_t* info,
                    opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
void deregister_nspace(opal_jobid_t jobid, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
int register_client(const opal_process_name_t* proc, uid_t uid, gid_t gid, void* server_object,
                    opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
void deregister_client(const opal_process_name_t* proc, opal_pmix_op_cbfunc_t cb,
                       void* cbdata) noexcept;
int setup_fork(const opal_process_name_t* proc, char*** env) noexcept;
int dmodex_request(const opal_process_name_t* proc, opal_pmix_modex_cbfunc_t cb,
                   void* cbdata) noexcept;
int notify_event(int status, const opal_process_name_t* source, opal_list_t* info,
                 opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept;
}  // namespace server

}  // namespace plugin::pmix::mca
