// pmix dr: the component (PMIx framework 2.0.0 of Open MPI 4.1), its
// parameters, the module table and the entries both halves share (the local
// key/value store, nspace names).
#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "mca_params.hpp"
#include "pmix.hpp"
#include "text.hpp"

namespace plugin::pmix::mca {

State& state() noexcept {
    static State s;
    return s;
}

int register_params() noexcept {
    using plugin::common::ParamSpec;
    using plugin::common::ParamType;
    Params& p = state().params;
    const Params d;
    const std::array specs{
        ParamSpec{"verbose", "Verbosity of the pmix dr log stream (0 quiet, 20 info, 50 debug)",
                  ParamType::Int, &p.verbose, d.verbose},
        ParamSpec{"max_msg_size",
                  "Largest message the server or client accepts on its socket, in MiB (a longer "
                  "one closes the connection)",
                  ParamType::Unsigned, &p.max_msg_size_mb, d.max_msg_size_mb},
        ParamSpec{"get_timeout",
                  "Seconds a get may wait for a local commit or a remote daemon's reply before "
                  "it fails with a timeout",
                  ParamType::Unsigned, &p.get_timeout_s, d.get_timeout_s},
        ParamSpec{"max_pending",
                  "Gets a server parks at most (waiting for commits or remote daemons); more "
                  "fail at once",
                  ParamType::Unsigned, &p.max_pending, d.max_pending},
        ParamSpec{"check_peer_uid",
                  "Refuse a connection from (server) or to (client) a process of another user, "
                  "read from the socket's peer credentials before anything else; turn off for "
                  "debugging only: then any local user who can reach the socket is heard",
                  ParamType::Bool, &p.check_peer_uid, d.check_peer_uid},
        ParamSpec{"hello_timeout",
                  "Seconds a new connection to the server may take to identify itself (Hello) "
                  "before it is closed; 0 waits forever",
                  ParamType::Unsigned, &p.hello_timeout_s, d.hello_timeout_s},
    };
    return plugin::common::register_params(&mca_pmix_dr_component.base_version, specs) == 0
               ? OPAL_SUCCESS
               : OPAL_ERROR;
}

int store_local(const opal_process_name_t* proc, opal_value_t* val) noexcept {
    if (val == nullptr || val->key == nullptr)
        return OPAL_ERR_BAD_PARAM;
    try {
        const ProcName who = name_of(proc != nullptr ? *proc : OPAL_PROC_MY_NAME);
        core::KeyValue kv = to_core_kv(*val);
        if (kv.key.empty())
            return OPAL_ERR_NOT_SUPPORTED;
        std::lock_guard lock(state().store_mu);
        state().store.put(who, std::move(kv));
        return OPAL_SUCCESS;
    } catch (...) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
}

opal_value_t* lookup_local(ProcName proc, const char* key) {
    std::lock_guard lock(state().store_mu);
    const core::Value* v = state().store.find(proc, key);
    return v == nullptr ? nullptr : to_opal(key, *v);
}

namespace {

bool legacy_get() noexcept {
    return true;  // ORTE then wires the daemons with PROC_URI alone
}

const char* get_nspace(opal_jobid_t jobid) noexcept {
    State& s = state();
    std::lock_guard lock(s.nspace_mu);
    auto [it, fresh] = s.nspaces.try_emplace(jobid);
    if (fresh)
        it->second = std::to_string(jobid);
    return it->second.c_str();
}

void register_jobid(opal_jobid_t jobid, const char* nspace) noexcept {
    if (nspace == nullptr)
        return;
    State& s = state();
    std::lock_guard lock(s.nspace_mu);
    s.nspaces.try_emplace(jobid, nspace);
}

// Our client reads back what our server wrote: no compression needed.
int identity(const char* input, char** out) noexcept {
    *out = input == nullptr ? nullptr : strdup(input);
    return OPAL_SUCCESS;
}

const char* get_version() noexcept {
    return "dr-1";
}

// `--mca pmix dr` (an include list naming us): otherwise the stock module
// keeps every job, because mpirun, orted and the applications only exclude
// other components.
bool selected_by_name() noexcept {
    return plugin::common::selection_names(opal_pmix_base_framework.framework_selection, "dr");
}

int dr_register() noexcept {
    return register_params();
}

int dr_open() noexcept {
    state().log.open("pmix:dr", state().params.verbose);
    return OPAL_SUCCESS;
}

int dr_close() noexcept {
    state().log.close();
    return OPAL_SUCCESS;
}

opal_pmix_base_module_t module = {
    .legacy_get = legacy_get,
    .init = client::init,
    .finalize = client::finalize,
    .initialized = client::initialized,
    .abort = client::abort,
    .commit = client::commit,
    .fence = client::fence,
    .fence_nb = client::fence_nb,
    .put = client::put,
    .get = client::get,
    .get_nb = nullptr,
    .publish = client::publish,
    .publish_nb = client::publish_nb,
    .lookup = client::lookup,
    .lookup_nb = client::lookup_nb,
    .unpublish = client::unpublish,
    .unpublish_nb = client::unpublish_nb,
    .spawn = client::spawn,
    .spawn_nb = client::spawn_nb,
    .connect = client::connect,
    .connect_nb = client::connect_nb,
    .disconnect = nullptr,
    .disconnect_nb = nullptr,
    .resolve_peers = nullptr,
    .resolve_nodes = nullptr,
    .query = nullptr,
    .log = nullptr,
    .allocate = nullptr,
    .job_control = nullptr,
    .monitor = nullptr,
    .register_cleanup = nullptr,
    .server_init = server::init,
    .server_finalize = server::finalize,
    .generate_regex = identity,
    .generate_ppn = identity,
    .server_register_nspace = server::register_nspace,
    .server_deregister_nspace = server::deregister_nspace,
    .server_register_client = server::register_client,
    .server_deregister_client = server::deregister_client,
    .server_setup_fork = server::setup_fork,
    .server_dmodex_request = server::dmodex_request,
    .server_notify_event = server::notify_event,
    .server_iof_push = nullptr,
    .server_setup_application = nullptr,
    .server_setup_local_support = nullptr,
    .tool_init = nullptr,
    .tool_finalize = nullptr,
    .get_version = get_version,
    .register_evhandler = client::register_evhandler,
    .deregister_evhandler = client::deregister_evhandler,
    .notify_event = opal_pmix_base_notify_event,
    .store_local = store_local,
    .get_nspace = get_nspace,
    .register_jobid = register_jobid,
};

int dr_query(mca_base_module_t** out, int* priority) noexcept {
    *out = nullptr;
    *priority = 0;
    if (!selected_by_name())
        return OPAL_ERR_NOT_AVAILABLE;
    // Named in --mca pmix and set wrong: say so once and end (mca_params.hpp).
    plugin::common::exit_on_bad_params(&mca_pmix_dr_component.base_version, {});
    // An application process launched by ORTE whose daemon is not ours (the
    // name was exported to the application only): no server to talk to.
    if (std::getenv("OMPI_MCA_orte_launch") != nullptr && std::getenv(kEnvUri) == nullptr) {
        logf(state().log, LogLevel::Error,
             "named in --mca pmix, but this process was not launched by a pmix dr server");
        return OPAL_ERR_NOT_AVAILABLE;
    }
    *priority = 100;
    *out = reinterpret_cast<mca_base_module_t*>(&module);
    return OPAL_SUCCESS;
}

}  // namespace
}  // namespace plugin::pmix::mca

extern "C" {
__attribute__((visibility("default"))) opal_pmix_base_component_t mca_pmix_dr_component = {
    .base_version =
        {
            OPAL_PMIX_BASE_VERSION_2_0_0,
            .mca_component_name = "dr",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = plugin::pmix::mca::dr_open,
            .mca_close_component = plugin::pmix::mca::dr_close,
            .mca_query_component = plugin::pmix::mca::dr_query,
            .mca_register_component_params = plugin::pmix::mca::dr_register,
        },
    .base_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .priority = 100,
};
}
