// The server module's entry points, called by ORTE in mpirun and the orteds
// (on the launcher's event thread, except setup_fork).
#include <cinttypes>
#include <cstring>
#include <random>
#include <unistd.h>

#include "server.hpp"

namespace plugin::pmix::mca::server {

namespace {

std::uint64_t fresh_secret() {
    static std::mutex mu;
    static std::mt19937_64 gen{std::random_device{}()};
    std::lock_guard lock(mu);
    std::uint64_t s = 0;
    while (s == 0)
        s = gen();
    return s;
}

template <class F>
int guarded(F f) noexcept {
    try {
        return f();
    } catch (...) {
        logf(state().log, LogLevel::Error, "out of memory in the server");
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
}

}  // namespace

int init(opal_pmix_server_module_t* host, opal_list_t* info) noexcept {
    return guarded([&]() -> int {
        Server& s = srv();
        if (s.running)
            return OPAL_SUCCESS;
        if (host != nullptr)
            s.host = *host;
        s.commit_waits = core::PendingTable(state().params.max_pending);
        s.dmodex_waits = core::PendingTable(state().params.max_pending);
        const opal_value_t* tmp = find_value(info, OPAL_PMIX_SERVER_TMPDIR);
        const std::string tmpdir =
            tmp != nullptr && tmp->type == OPAL_STRING && tmp->data.string != nullptr
                ? tmp->data.string
                : "";
        const int rc = start_listener(tmpdir);
        s.running = rc == OPAL_SUCCESS;
        return rc;
    });
}

int finalize() noexcept {
    Server& s = srv();
    if (!s.running)
        return OPAL_SUCCESS;
    const Counters& c = s.counters;
    logf(state().log, LogLevel::Info,
         "served %" PRIu64 " connections (%" PRIu64 " refused, %" PRIu64 " bad messages, %" PRIu64
         " of another user, %" PRIu64 " late hellos), %" PRIu64 " fences (%" PRIu64
         " failed), %" PRIu64 " direct-modex requests, %" PRIu64 " timeouts",
         c.accepted, c.refused, c.bad_messages, c.foreign, c.hello_late, c.fences, c.failed_fences,
         c.dmodex, c.timeouts);
    stop_all();
    s.running = false;
    return OPAL_SUCCESS;
}

int register_nspace(opal_jobid_t jobid, int nlocalprocs, opal_list_t* info,
                    opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    const int rc = guarded([&]() -> int {
        Server& s = srv();
        auto records =
            core::job_records(jobid, to_core_list(info), OPAL_PMIX_PROC_DATA, OPAL_PMIX_RANK);
        std::lock_guard lock(s.reg_mu);
        s.reg.add_job(jobid, static_cast<std::uint32_t>(std::max(nlocalprocs, 0)),
                      std::move(records));
        return OPAL_SUCCESS;
    });
    // The per-process lists travel as pointers the caller does not free.
    if (info != nullptr) {
        opal_value_t* v;
        OPAL_LIST_FOREACH(v, info, opal_value_t) {
            if (v->type == OPAL_PTR && v->key != nullptr &&
                std::strcmp(v->key, OPAL_PMIX_PROC_DATA) == 0 && v->data.ptr != nullptr) {
                opal_list_t* l = static_cast<opal_list_t*>(v->data.ptr);
                OPAL_LIST_RELEASE(l);
                v->data.ptr = nullptr;
            }
        }
    }
    if (cb != nullptr)
        cb(rc, cbdata);
    return rc;
}

void deregister_nspace(opal_jobid_t jobid, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    Server& s = srv();
    {
        std::lock_guard lock(s.reg_mu);
        s.reg.remove_job(jobid);
    }
    if (cb != nullptr)
        cb(OPAL_SUCCESS, cbdata);
}

int register_client(const opal_process_name_t* proc, uid_t uid, gid_t gid, void* server_object,
                    opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    const int rc = guarded([&]() -> int {
        Server& s = srv();
        std::lock_guard lock(s.reg_mu);
        s.reg.add_client(name_of(*proc), uid, gid, server_object);
        return OPAL_SUCCESS;
    });
    if (cb != nullptr)
        cb(rc, cbdata);
    return rc;
}

void deregister_client(const opal_process_name_t* proc, opal_pmix_op_cbfunc_t cb,
                       void* cbdata) noexcept {
    Server& s = srv();
    const ProcName p = name_of(*proc);
    if (const core::Client* c = s.reg.client(p); c != nullptr && c->connected && !c->finalized)
        client_lost(p);
    {
        std::lock_guard lock(s.reg_mu);
        s.reg.remove_client(p);
    }
    if (cb != nullptr)
        cb(OPAL_SUCCESS, cbdata);
}

int setup_fork(const opal_process_name_t* proc, char*** env) noexcept {
    return guarded([&]() -> int {
        Server& s = srv();
        if (!s.running)
            return OPAL_ERR_NOT_INITIALIZED;
        const ProcName p = name_of(*proc);
        const std::uint64_t secret = fresh_secret();
        {
            std::lock_guard lock(s.reg_mu);
            core::Client* c = s.reg.client(p);
            if (c == nullptr)
                c = &s.reg.add_client(p, geteuid(), getegid(), nullptr);
            c->secret = secret;
        }
        char buf[32];
        opal_setenv(kEnvUri, s.path.c_str(), true, env);
        std::snprintf(buf, sizeof buf, "%u.%u", p.jobid, p.vpid);
        opal_setenv(kEnvProc, buf, true, env);
        std::snprintf(buf, sizeof buf, "%016" PRIx64, secret);
        opal_setenv(kEnvSecret, buf, true, env);
        return OPAL_SUCCESS;
    });
}

int dmodex_request(const opal_process_name_t* proc, opal_pmix_modex_cbfunc_t cb,
                   void* cbdata) noexcept {
    return guarded([&]() -> int {
        const core::Client* c = srv().reg.client(name_of(*proc));
        if (c == nullptr || cb == nullptr)
            return OPAL_ERR_NOT_FOUND;
        return park_host_request(*c, cb, cbdata);
    });
}

int notify_event(int status, const opal_process_name_t* source, opal_list_t* info,
                 opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    const int rc = guarded([&]() -> int {
        Server& s = srv();
        core::EventBody ev;
        ev.status = status;
        ev.source = source != nullptr ? name_of(*source) : ProcName{};
        ev.info = to_core_list(info);
        // The event goes to the range the launcher named, else to everyone.
        const opal_value_t* range = find_value(info, OPAL_PMIX_EVENT_CUSTOM_RANGE);
        const bool ranged = range != nullptr && range->type == OPAL_NAME;
        const auto payload = core::encode(ev);
        for (auto& [id, c] : s.conns) {
            if (!c->identified || c->finalized)
                continue;
            if (ranged && (c->proc.jobid != range->data.name.jobid ||
                           (range->data.name.vpid != OPAL_VPID_WILDCARD &&
                            range->data.name.vpid != c->proc.vpid)))
                continue;
            send_to(*c, core::MsgType::Event, 0, payload);
        }
        return OPAL_SUCCESS;
    });
    if (cb != nullptr)
        cb(rc, cbdata);
    return OPAL_SUCCESS;
}

}  // namespace plugin::pmix::mca::server
