// The client module's entry points, called by ORTE and OMPI in MPI
// processes from any thread. Blocking calls wait on the connection; callbacks
// and event handlers run on the connection's I/O thread.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "client_conn.hpp"
#include "handlers.hpp"
#include "pmix.hpp"

namespace plugin::pmix::mca::client {

namespace {

struct Client {
    std::mutex life_mu;  // init and finalize, one at a time
    std::mutex mu;       // puts, handlers (never held while waiting on the server)
    int refs = 0;
    ProcName me{};
    Connection conn;
    core::KvList puts;  // since the last commit
    core::HandlerChain chain;
    std::map<std::uint64_t, opal_pmix_notification_fn_t> handlers;  // by token
    std::uint64_t next_token = 1;
};

Client& cl() noexcept {
    static Client c;
    return c;
}

template <class F>
int guarded(F f) noexcept {
    try {
        return f();
    } catch (...) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
}

bool flag(opal_list_t* info, const char* key) {
    const opal_value_t* v = find_value(info, key);
    return v != nullptr && v->type == OPAL_BOOL && v->data.flag;
}

// Stores what the server sent; false if it does not decode.
bool ingest(std::span<const std::uint8_t> body, bool complete) {
    auto recs = core::decode_records(body);
    if (!recs)
        return false;
    std::lock_guard lock(state().store_mu);
    for (const core::Record& r : *recs) {
        state().store.ingest(r, complete && r.proc.vpid < core::kRankWildcard);
        if (r.proc.vpid == core::kRankWildcard)
            state().store.mark_job_known(r.proc.jobid);
    }
    return true;
}

// ---- events: run the handler chain for one event on the I/O thread.

struct EventRun {
    core::EventBody ev;
    opal_process_name_t source{};
    opal_list_t* info = nullptr;
    opal_list_t* results = nullptr;
    std::vector<opal_pmix_notification_fn_t> fns;
    std::size_t next = 0;
    ~EventRun() {
        if (info != nullptr)
            OPAL_LIST_RELEASE(info);
        if (results != nullptr)
            OPAL_LIST_RELEASE(results);
    }
};

void run_next(EventRun* run);

void handler_done(int status, opal_list_t*, opal_pmix_op_cbfunc_t cbfunc, void* thiscbdata,
                  void* cbdata) {
    auto* run = static_cast<EventRun*>(cbdata);
    if (cbfunc != nullptr)
        cbfunc(OPAL_SUCCESS, thiscbdata);
    if (status == OPAL_ERR_HANDLERS_COMPLETE) {
        delete run;
        return;
    }
    run_next(run);
}

void run_next(EventRun* run) {
    if (run->next >= run->fns.size()) {
        delete run;
        return;
    }
    const opal_pmix_notification_fn_t fn = run->fns[run->next++];
    fn(run->ev.status, &run->source, run->info, run->results, handler_done, run);
}

void on_event(const core::EventBody& ev) {
    Client& c = cl();
    auto run = std::make_unique<EventRun>();
    {
        std::lock_guard lock(c.mu);
        for (const std::uint64_t t : c.chain.for_event(ev.status))
            if (auto it = c.handlers.find(t); it != c.handlers.end())
                run->fns.push_back(it->second);
    }
    logf(state().log, LogLevel::Debug, "event %d from %u.%u: %zu handlers", ev.status,
         ev.source.jobid, ev.source.vpid, run->fns.size());
    if (run->fns.empty())
        return;
    run->ev = ev;
    run->source = opal_name(ev.source);
    run->info = to_opal_list(ev.info);
    run->results = OBJ_NEW(opal_list_t);
    run_next(run.release());
}

// A collective over `procs` (NULL or empty: my whole job), canonical.
std::vector<std::uint8_t> collective(opal_list_t* procs, bool collect) {
    core::FenceBody b;
    b.collect = collect;
    b.procs = names_of(procs);
    if (b.procs.empty())
        b.procs.push_back({cl().me.jobid, core::kRankWildcard});
    b.procs = core::canonical(std::move(b.procs));
    return core::encode(b);
}

// Asks the server for a job's registered data (another job's, after
// spawn or connect).
void fetch_job(std::uint32_t jobid) {
    Answer a = cl().conn.call(core::MsgType::JobData, core::encode_u32(jobid));
    if (a.status == OPAL_SUCCESS)
        ingest(a.body, false);
    std::lock_guard lock(state().store_mu);
    state().store.mark_job_known(jobid);  // known to be unknown: do not ask again
}

}  // namespace

int init(opal_list_t*) noexcept {
    return guarded([]() -> int {
        Client& c = cl();
        std::lock_guard life(c.life_mu);
        if (c.refs > 0) {
            ++c.refs;
            return OPAL_SUCCESS;
        }
        const char* uri = std::getenv(kEnvUri);
        const char* proc = std::getenv(kEnvProc);
        const char* secret = std::getenv(kEnvSecret);
        core::HelloBody hello;
        if (uri == nullptr || proc == nullptr || secret == nullptr ||
            std::sscanf(proc, "%u.%u", &hello.proc.jobid, &hello.proc.vpid) != 2) {
            logf(state().log, LogLevel::Error,
                 "no pmix dr server: this process was not started by mpirun --mca pmix dr");
            return OPAL_ERR_NOT_AVAILABLE;
        }
        hello.secret = std::strtoull(secret, nullptr, 16);
        Answer a = c.conn.open(uri, hello, state().max_msg(), on_event);
        if (a.status != OPAL_SUCCESS) {
            logf(state().log, LogLevel::Error, "cannot reach the pmix dr server at %s (status %d)",
                 uri, a.status);
            return a.status;
        }
        if (!ingest(a.body, false)) {
            c.conn.close();
            return OPAL_ERR_UNPACK_FAILURE;
        }
        c.me = hello.proc;
        opal_process_name_t name = opal_name(c.me);
        opal_proc_set_name(&name);
        c.refs = 1;
        return OPAL_SUCCESS;
    });
}

int finalize() noexcept {
    Client& c = cl();
    std::lock_guard life(c.life_mu);
    if (c.refs == 0 || --c.refs > 0)
        return OPAL_SUCCESS;
    // The launcher learns we finalized before we disconnect.
    const Answer a = c.conn.call(core::MsgType::Finalize, {});
    c.conn.close();
    return a.status == OPAL_ERR_COMM_FAILURE ? OPAL_SUCCESS : a.status;
}

int initialized() noexcept {
    std::lock_guard life(cl().life_mu);
    return cl().refs > 0 ? 1 : 0;
}

int abort(int status, const char* msg, opal_list_t* procs) noexcept {
    return guarded([&]() -> int {
        Client& c = cl();
        if (!c.conn.is_open())
            return OPAL_ERR_NOT_INITIALIZED;
        core::AbortBody b;
        b.status = status;
        b.message = msg == nullptr ? "" : msg;
        b.procs = names_of(procs);
        // From our own event handler nobody would read the reply: just send.
        if (c.conn.on_io_thread())
            return c.conn.send_only(core::MsgType::Abort, core::encode(b));
        return c.conn.call(core::MsgType::Abort, core::encode(b), 10000).status;
    });
}

int put(opal_pmix_scope_t scope, opal_value_t* val) noexcept {
    if (val == nullptr || val->key == nullptr)
        return OPAL_ERR_BAD_PARAM;
    return guarded([&]() -> int {
        const core::Scope s = scope == OPAL_PMIX_LOCAL    ? core::Scope::Local
                              : scope == OPAL_PMIX_REMOTE ? core::Scope::Remote
                                                          : core::Scope::Global;
        core::KeyValue kv = to_core_kv(*val, s);
        if (kv.key.empty())
            return OPAL_ERR_NOT_SUPPORTED;
        Client& c = cl();
        {
            std::lock_guard lock(state().store_mu);
            state().store.put(c.me, kv);  // own puts are visible at once
        }
        std::lock_guard lock(c.mu);
        c.puts.push_back(std::move(kv));
        return OPAL_SUCCESS;
    });
}

int commit() noexcept {
    return guarded([]() -> int {
        Client& c = cl();
        core::KvList puts;
        {
            std::lock_guard lock(c.mu);
            puts.swap(c.puts);
        }
        return c.conn.send_only(core::MsgType::Commit, core::encode(puts));
    });
}

int fence_nb(opal_list_t* procs, int collect, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Fence, collective(procs, collect != 0),
                          [cb, cbdata, collect](int status, std::span<const std::uint8_t> body) {
                              if (status == OPAL_SUCCESS && !ingest(body, collect != 0))
                                  status = OPAL_ERR_UNPACK_FAILURE;
                              if (cb != nullptr)
                                  cb(status, cbdata);
                          });
        return OPAL_SUCCESS;
    });
}

int fence(opal_list_t* procs, int collect) noexcept {
    return guarded([&]() -> int {
        Answer a = cl().conn.call(core::MsgType::Fence, collective(procs, collect != 0));
        if (a.status == OPAL_SUCCESS && !ingest(a.body, collect != 0))
            return OPAL_ERR_UNPACK_FAILURE;
        return a.status;
    });
}

int get(const opal_process_name_t* proc, const char* key, opal_list_t* info,
        opal_value_t** val) noexcept {
    if (key == nullptr || val == nullptr)
        return OPAL_ERR_BAD_PARAM;
    return guarded([&]() -> int {
        Client& c = cl();
        const ProcName who = proc != nullptr ? name_of(*proc) : name_of(OPAL_PROC_MY_NAME);
        if ((*val = lookup_local(who, key)) != nullptr)
            return OPAL_SUCCESS;
        // In mpirun and the orteds, and for our own data, the store is all.
        if (!c.conn.is_open() || who == c.me) {
            logf(state().log, LogLevel::Debug, "get %u.%u %s: not found locally", who.jobid,
                 who.vpid, key);
            return OPAL_ERR_NOT_FOUND;
        }
        core::GetAction action;
        bool job_known;
        {
            std::lock_guard lock(state().store_mu);
            action = state().store.miss(who, flag(info, OPAL_PMIX_OPTIONAL));
            job_known = state().store.job_known(who.jobid);
        }
        if (action == core::GetAction::NotFound)
            return OPAL_ERR_NOT_FOUND;
        if (!job_known)
            fetch_job(who.jobid);
        if (who.vpid < core::kRankWildcard) {
            core::GetBody b{who, key, flag(info, OPAL_PMIX_IMMEDIATE)};
            Answer a = c.conn.call(core::MsgType::Get, core::encode(b));
            if (a.status == OPAL_SUCCESS && !ingest(a.body, !b.immediate))
                return OPAL_ERR_UNPACK_FAILURE;
            if (a.status != OPAL_SUCCESS && a.status != OPAL_ERR_NOT_FOUND)
                return a.status;
        }
        *val = lookup_local(who, key);
        if (*val == nullptr)
            logf(state().log, LogLevel::Debug, "get %u.%u %s: not found", who.jobid, who.vpid, key);
        return *val != nullptr ? OPAL_SUCCESS : OPAL_ERR_NOT_FOUND;
    });
}

int publish_nb(opal_list_t* info, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Publish, core::encode(to_core_list(info)),
                          [cb, cbdata](int status, std::span<const std::uint8_t>) {
                              if (cb != nullptr)
                                  cb(status, cbdata);
                          });
        return OPAL_SUCCESS;
    });
}

int publish(opal_list_t* info) noexcept {
    return guarded([&]() -> int {
        return cl().conn.call(core::MsgType::Publish, core::encode(to_core_list(info))).status;
    });
}

namespace {

// The publishers' data from a lookup reply, as opal_pmix_pdata_t items.
int lookup_results(std::span<const std::uint8_t> body, opal_list_t* out) {
    auto recs = core::decode_records(body);
    if (!recs)
        return OPAL_ERR_UNPACK_FAILURE;
    for (const core::Record& r : *recs) {
        for (const core::KeyValue& kv : r.values) {
            auto* pd = OBJ_NEW(opal_pmix_pdata_t);
            pd->proc = opal_name(r.proc);
            fill_opal(pd->value, kv.key, kv.value);
            opal_list_append(out, &pd->super);
        }
    }
    return OPAL_SUCCESS;
}

core::LookupBody lookup_body(char** keys, opal_list_t* info) {
    core::LookupBody b;
    b.keys = strings_of(keys);
    b.info = to_core_list(info);
    return b;
}

}  // namespace

int lookup(opal_list_t* data, opal_list_t* info) noexcept {
    return guarded([&]() -> int {
        core::LookupBody b;
        b.info = to_core_list(info);
        opal_pmix_pdata_t* pd;
        OPAL_LIST_FOREACH(pd, data, opal_pmix_pdata_t) {
            if (pd->value.key != nullptr)
                b.keys.emplace_back(pd->value.key);
        }
        Answer a = cl().conn.call(core::MsgType::Lookup, core::encode(b));
        if (a.status != OPAL_SUCCESS)
            return a.status;
        auto recs = core::decode_records(a.body);
        if (!recs)
            return OPAL_ERR_UNPACK_FAILURE;
        // Each requested key gets its publisher and value, if it was found.
        int rc = OPAL_SUCCESS;
        OPAL_LIST_FOREACH(pd, data, opal_pmix_pdata_t) {
            const core::Value* value = nullptr;
            for (const core::Record& r : *recs) {
                if (pd->value.key != nullptr && (value = core::find_key(r.values, pd->value.key))) {
                    pd->proc = opal_name(r.proc);
                    fill_opal(pd->value, pd->value.key, *value);
                    break;
                }
            }
            if (value == nullptr)
                rc = OPAL_ERR_NOT_FOUND;
        }
        return rc;
    });
}

int lookup_nb(char** keys, opal_list_t* info, opal_pmix_lookup_cbfunc_t cb, void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Lookup, core::encode(lookup_body(keys, info)),
                          [cb, cbdata](int status, std::span<const std::uint8_t> body) {
                              opal_list_t results;
                              OBJ_CONSTRUCT(&results, opal_list_t);
                              if (status == OPAL_SUCCESS)
                                  status = lookup_results(body, &results);
                              if (cb != nullptr)
                                  cb(status, &results, cbdata);
                              OPAL_LIST_DESTRUCT(&results);
                          });
        return OPAL_SUCCESS;
    });
}

int unpublish(char** keys, opal_list_t* info) noexcept {
    return guarded([&]() -> int {
        return cl()
            .conn.call(core::MsgType::Unpublish, core::encode(lookup_body(keys, info)))
            .status;
    });
}

int unpublish_nb(char** keys, opal_list_t* info, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Unpublish, core::encode(lookup_body(keys, info)),
                          [cb, cbdata](int status, std::span<const std::uint8_t>) {
                              if (cb != nullptr)
                                  cb(status, cbdata);
                          });
        return OPAL_SUCCESS;
    });
}

namespace {

core::SpawnBody spawn_body(opal_list_t* job_info, opal_list_t* apps) {
    core::SpawnBody b;
    b.job_info = to_core_list(job_info);
    if (apps == nullptr)
        return b;
    opal_pmix_app_t* app;
    OPAL_LIST_FOREACH(app, apps, opal_pmix_app_t) {
        core::App a;
        a.cmd = app->cmd == nullptr ? "" : app->cmd;
        a.argv = strings_of(app->argv);
        a.env = strings_of(app->env);
        a.cwd = app->cwd == nullptr ? "" : app->cwd;
        a.maxprocs = app->maxprocs;
        a.info = to_core_list(&app->info);
        b.apps.push_back(std::move(a));
    }
    return b;
}

std::uint32_t jobid_of(std::span<const std::uint8_t> body) {
    auto j = core::decode_u32(body);
    return j ? *j : OPAL_JOBID_INVALID;
}

}  // namespace

int spawn(opal_list_t* job_info, opal_list_t* apps, opal_jobid_t* jobid) noexcept {
    return guarded([&]() -> int {
        Answer a = cl().conn.call(core::MsgType::Spawn, core::encode(spawn_body(job_info, apps)));
        if (a.status == OPAL_SUCCESS && jobid != nullptr)
            *jobid = jobid_of(a.body);
        return a.status;
    });
}

int spawn_nb(opal_list_t* job_info, opal_list_t* apps, opal_pmix_spawn_cbfunc_t cb,
             void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Spawn, core::encode(spawn_body(job_info, apps)),
                          [cb, cbdata](int status, std::span<const std::uint8_t> body) {
                              if (cb != nullptr)
                                  cb(status, jobid_of(body), cbdata);
                          });
        return OPAL_SUCCESS;
    });
}

int connect(opal_list_t* procs) noexcept {
    return guarded([&]() -> int {
        return cl().conn.call(core::MsgType::Connect, collective(procs, false)).status;
    });
}

int connect_nb(opal_list_t* procs, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    return guarded([&]() -> int {
        cl().conn.request(core::MsgType::Connect, collective(procs, false),
                          [cb, cbdata](int status, std::span<const std::uint8_t>) {
                              if (cb != nullptr)
                                  cb(status, cbdata);
                          });
        return OPAL_SUCCESS;
    });
}

void register_evhandler(opal_list_t* codes, opal_list_t* info, opal_pmix_notification_fn_t handler,
                        opal_pmix_evhandler_reg_cbfunc_t cb, void* cbdata) noexcept {
    std::size_t ref = 0;
    int rc = OPAL_SUCCESS;
    try {
        std::vector<int> list;
        if (codes != nullptr) {
            opal_value_t* v;
            OPAL_LIST_FOREACH(v, codes, opal_value_t) {
                list.push_back(v->data.integer);
            }
        }
        Client& c = cl();
        std::lock_guard lock(c.mu);
        const std::uint64_t token = c.next_token++;
        c.handlers[token] = handler;
        ref = c.chain.add(std::move(list), flag(info, OPAL_PMIX_EVENT_ORDER_PREPEND), token);
    } catch (...) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (cb != nullptr)
        cb(rc, ref, cbdata);
}

void deregister_evhandler(size_t ref, opal_pmix_op_cbfunc_t cb, void* cbdata) noexcept {
    {
        Client& c = cl();
        std::lock_guard lock(c.mu);
        if (const auto token = c.chain.remove(ref))
            c.handlers.erase(*token);
    }
    if (cb != nullptr)
        cb(OPAL_SUCCESS, cbdata);
}

}  // namespace plugin::pmix::mca::client
