// What the server does with each client message, and the launcher's
// callbacks that complete them.
#include <cstring>
#include <optional>
#include <unistd.h>

#include "server.hpp"

namespace plugin::pmix::mca::server {

namespace {

// Keeps what a launcher call borrows until its callback runs.
struct OpCtx {
    std::uint64_t token = 0;
    opal_process_name_t proc{};
    opal_list_t list1;
    opal_list_t list2;
    char** argv = nullptr;
    std::string text;
    std::uint64_t fence_id = 0;
    OpCtx() {
        OBJ_CONSTRUCT(&list1, opal_list_t);
        OBJ_CONSTRUCT(&list2, opal_list_t);
    }
    ~OpCtx() {
        OPAL_LIST_DESTRUCT(&list1);
        OPAL_LIST_DESTRUCT(&list2);
        opal_argv_free(argv);
    }
    OpCtx(const OpCtx&) = delete;
    OpCtx& operator=(const OpCtx&) = delete;
};

// A context for a request of client `c` that the launcher completes.
OpCtx* new_ctx(const Conn& c, std::uint32_t req) {
    auto* ctx = new OpCtx;
    ctx->token = token_of(c.id, req);
    ctx->proc = opal_name(c.proc);
    return ctx;
}

void op_done(int status, void* cbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    reply(ctx->token, status);
}

std::vector<std::uint8_t> one_record(ProcName proc, const core::KvList& values) {
    const core::Record rec{proc, values};
    return core::encode_records({&rec, 1});
}

void release_blob(void* blob) {
    delete static_cast<std::vector<std::uint8_t>*>(blob);
}

// The launcher request parked under `token`, removed (none if already answered).
std::optional<HostWait> take_host_wait(std::uint64_t token) {
    auto& waits = srv().host_waits;
    auto it = waits.find(token);
    if (it == waits.end())
        return std::nullopt;
    const HostWait w = it->second;
    waits.erase(it);
    return w;
}

// A remote daemon asked (through the launcher) for this client's data.
void answer_host(const HostWait& w, const core::Client& c) {
    auto* blob = new std::vector<std::uint8_t>(one_record(c.proc, c.remote));
    w.cb(OPAL_SUCCESS, reinterpret_cast<const char*>(blob->data()), blob->size(), w.cbdata,
         release_blob, blob);
}

// ---- Hello

void hello_done(int status, void* cbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    const core::Job* job = srv().reg.job(ctx->proc.jobid);
    if (status != OPAL_SUCCESS || job == nullptr) {
        reply(ctx->token, status != OPAL_SUCCESS ? status : OPAL_ERR_NOT_FOUND);
        return;
    }
    reply(ctx->token, OPAL_SUCCESS, core::encode_records(job->records));
}

bool on_hello(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_hello(payload);
    if (!b) {
        ++s.counters.refused;
        logf(state().log, LogLevel::Warn, "refused a connection: bad hello");
        return false;
    }
    core::Client* client = nullptr;
    {
        std::lock_guard lock(s.reg_mu);
        auto r = s.reg.authenticate(b->proc, b->secret);
        if (!r) {
            ++s.counters.refused;
            logf(state().log, LogLevel::Warn, "refused a connection claiming %u.%u: %s",
                 b->proc.jobid, b->proc.vpid, std::string(r.error().message).c_str());
            return false;
        }
        client = *r;
        client->connected = true;
    }
    c.identified = true;
    s.half_open.leave(c.id);
    c.proc = b->proc;
    c.in.set_max_length(state().max_msg());
    auto* ctx = new_ctx(c, req);
    if (s.host.client_connected == nullptr) {
        hello_done(OPAL_SUCCESS, ctx);
        return true;
    }
    const int rc = s.host.client_connected(&ctx->proc, client->host_object, hello_done, ctx);
    if (rc != OPAL_SUCCESS)
        hello_done(rc, ctx);
    return true;
}

// ---- Fence

void fence_done(int status, const char* data, size_t ndata, void* cbdata,
                opal_pmix_release_cbfunc_t rel, void* relcbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    Server& s = srv();
    auto f = s.fences.finish(ctx->fence_id);
    std::vector<std::uint8_t> body;
    if (f && status == OPAL_SUCCESS && f->collect) {
        auto all = core::decode_records(
            {reinterpret_cast<const std::uint8_t*>(data), data == nullptr ? 0 : ndata});
        if (!all) {
            logf(state().log, LogLevel::Error, "fence result undecodable: %s",
                 std::string(all.error().message).c_str());
            status = OPAL_ERR_UNPACK_FAILURE;
        } else {
            // Other nodes' data as they sent it (remote scope); this node's
            // processes with what is visible locally.
            std::vector<core::Record> out;
            for (core::Record& r : *all)
                if (s.reg.client(r.proc) == nullptr)
                    out.push_back(std::move(r));
            for (const ProcName& m : f->expected)
                if (const core::Client* c = s.reg.client(m); c != nullptr && c->committed)
                    out.push_back({m, c->local});
            body = core::encode_records(out);
        }
    }
    if (rel != nullptr)
        rel(relcbdata);
    if (!f)
        return;
    if (status != OPAL_SUCCESS) {
        fail_fence(*f, status);
        return;
    }
    for (const core::FenceWaiter& w : f->arrived)
        reply(w.token, OPAL_SUCCESS, body);
}

// All local participants are in: hand the collective to the launcher.
void start_fence(core::Fence& f) {
    Server& s = srv();
    f.in_host = true;
    ++s.counters.fences;
    std::vector<std::uint8_t> blob;
    if (f.collect) {
        core::Encoder e;
        for (const ProcName& m : f.expected)
            if (const core::Client* c = s.reg.client(m); c != nullptr)
                core::encode_record(e, {m, c->remote});
        blob = std::move(e.buffer());
    }
    auto* ctx = new OpCtx;
    ctx->fence_id = f.id;
    append_names(&ctx->list1, f.procs);
    // The launcher takes the data and free()s it.
    char* data = nullptr;
    if (!blob.empty()) {
        data = static_cast<char*>(malloc(blob.size()));
        std::memcpy(data, blob.data(), blob.size());
    }
    const int rc = s.host.fence_nb == nullptr ? OPAL_ERR_NOT_SUPPORTED
                                              : s.host.fence_nb(&ctx->list1, &ctx->list2, data,
                                                                blob.size(), fence_done, ctx);
    if (rc != OPAL_SUCCESS) {
        if (s.host.fence_nb == nullptr)
            free(data);
        fence_done(rc, nullptr, 0, ctx, nullptr, nullptr);
    }
}

bool on_fence(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_fence(payload);
    if (!b)
        return false;
    const auto procs = core::canonical(std::move(b->procs));
    auto f = s.fences.arrive(procs, s.reg.local_members(procs), {c.proc, token_of(c.id, req)},
                             b->collect);
    if (!f) {
        reply(token_of(c.id, req), OPAL_ERR_BAD_PARAM);
        return true;
    }
    if ((*f)->complete())
        start_fence(**f);
    return true;
}

// ---- Get and direct modex

void dmodex_done(int status, const char* data, size_t ndata, void* cbdata,
                 opal_pmix_release_cbfunc_t rel, void* relcbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    const std::span<const std::uint8_t> blob(reinterpret_cast<const std::uint8_t*>(data),
                                             data == nullptr ? 0 : ndata);
    if (status == OPAL_SUCCESS && !core::decode_records(blob)) {
        logf(state().log, LogLevel::Error, "direct-modex reply undecodable");
        status = OPAL_ERR_UNPACK_FAILURE;
    }
    for (const std::uint64_t t : srv().dmodex_waits.take(name_of(ctx->proc)))
        reply(t, status, status == OPAL_SUCCESS ? blob : std::span<const std::uint8_t>{});
    if (rel != nullptr)
        rel(relcbdata);
}

void start_dmodex(ProcName target) {
    Server& s = srv();
    ++s.counters.dmodex;
    auto* ctx = new OpCtx;
    ctx->proc = opal_name(target);
    const int rc = s.host.direct_modex == nullptr
                       ? OPAL_ERR_NOT_SUPPORTED
                       : s.host.direct_modex(&ctx->proc, &ctx->list1, dmodex_done, ctx);
    if (rc != OPAL_SUCCESS && rc != OPAL_ERR_IN_PROCESS)
        dmodex_done(rc, nullptr, 0, ctx, nullptr, nullptr);
}

bool on_get(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_get(payload);
    if (!b)
        return false;
    const std::uint64_t token = token_of(c.id, req);
    const std::uint64_t deadline = now_seconds() + state().params.get_timeout_s;
    if (const core::Client* t = s.reg.client(b->proc); t != nullptr) {
        if (t->committed) {
            reply(token, OPAL_SUCCESS, one_record(b->proc, t->local));
        } else if (b->immediate) {
            reply(token, OPAL_ERR_NOT_FOUND);
        } else if (!s.commit_waits.add(b->proc, token, deadline)) {
            reply(token, OPAL_ERR_OUT_OF_RESOURCE);
        }
        return true;
    }
    if (b->immediate || b->proc.vpid >= core::kRankWildcard) {
        reply(token, OPAL_ERR_NOT_FOUND);
        return true;
    }
    auto first = s.dmodex_waits.add(b->proc, token, deadline);
    if (!first)
        reply(token, OPAL_ERR_OUT_OF_RESOURCE);
    else if (*first)
        start_dmodex(b->proc);
    return true;
}

bool on_jobdata(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    auto jobid = core::decode_u32(payload);
    if (!jobid)
        return false;
    const core::Job* job = srv().reg.job(*jobid);
    if (job == nullptr)
        reply(token_of(c.id, req), OPAL_ERR_NOT_FOUND);
    else
        reply(token_of(c.id, req), OPAL_SUCCESS, core::encode_records(job->records));
    return true;
}

bool on_commit(Conn& c, std::span<const std::uint8_t> payload) {
    auto list = core::decode_kvlist_body(payload);
    if (!list)
        return false;
    core::Client* client = srv().reg.client(c.proc);
    if (client == nullptr)
        return true;  // deregistered meanwhile: nobody will ask
    core::Registry::commit(*client, *list);
    release_commit_waiters(*client);
    return true;
}

// ---- Pass-throughs to the launcher

// ORTE's data server files published names under the publisher's uid (the
// PMIx library adds it; so do we).
void append_uid(opal_list_t* info, ProcName proc) {
    const core::Client* c = srv().reg.client(proc);
    auto* v = OBJ_NEW(opal_value_t);
    v->key = strdup(OPAL_PMIX_USERID);
    v->type = OPAL_UINT32;
    v->data.uint32 = c == nullptr ? geteuid() : c->uid;
    opal_list_append(info, &v->super);
}

void* host_object(ProcName proc) {
    const core::Client* c = srv().reg.client(proc);
    return c == nullptr ? nullptr : c->host_object;
}

bool on_abort(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_abort(payload);
    if (!b)
        return false;
    auto* ctx = new_ctx(c, req);
    ctx->text = b->message;
    append_names(&ctx->list1, b->procs);
    const int rc = s.host.abort == nullptr
                       ? OPAL_ERR_NOT_SUPPORTED
                       : s.host.abort(&ctx->proc, host_object(c.proc), b->status, ctx->text.c_str(),
                                      b->procs.empty() ? nullptr : &ctx->list1, op_done, ctx);
    if (rc != OPAL_SUCCESS)
        op_done(rc, ctx);
    return true;
}

bool on_finalize(Conn& c, std::uint32_t req) {
    Server& s = srv();
    c.finalized = true;
    if (core::Client* client = s.reg.client(c.proc); client != nullptr)
        client->finalized = true;
    auto* ctx = new_ctx(c, req);
    const int rc = s.host.client_finalized == nullptr
                       ? OPAL_SUCCESS
                       : s.host.client_finalized(&ctx->proc, host_object(c.proc), op_done, ctx);
    if (rc != OPAL_SUCCESS || s.host.client_finalized == nullptr)
        op_done(rc, ctx);
    return true;
}

bool on_publish(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto list = core::decode_kvlist_body(payload);
    if (!list)
        return false;
    auto* ctx = new_ctx(c, req);
    append_values(&ctx->list1, *list);
    append_uid(&ctx->list1, c.proc);
    const int rc = s.host.publish == nullptr
                       ? OPAL_ERR_NOT_SUPPORTED
                       : s.host.publish(&ctx->proc, &ctx->list1, op_done, ctx);
    if (rc != OPAL_SUCCESS)
        op_done(rc, ctx);
    return true;
}

void lookup_done(int status, opal_list_t* data, void* cbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    std::vector<core::Record> out;
    if (data != nullptr) {
        opal_pmix_pdata_t* pd;
        OPAL_LIST_FOREACH(pd, data, opal_pmix_pdata_t) {
            core::KeyValue kv = to_core_kv(pd->value);
            if (!kv.key.empty())
                out.push_back({name_of(pd->proc), {std::move(kv)}});
        }
    }
    reply(ctx->token, status, core::encode_records(out));
}

bool on_lookup(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload, bool unpublish) {
    Server& s = srv();
    auto b = core::decode_lookup(payload);
    if (!b)
        return false;
    auto* ctx = new_ctx(c, req);
    ctx->argv = to_argv(b->keys);
    append_values(&ctx->list1, b->info);
    append_uid(&ctx->list1, c.proc);
    int rc = OPAL_ERR_NOT_SUPPORTED;
    if (unpublish && s.host.unpublish != nullptr)
        rc = s.host.unpublish(&ctx->proc, ctx->argv, &ctx->list1, op_done, ctx);
    else if (!unpublish && s.host.lookup != nullptr)
        rc = s.host.lookup(&ctx->proc, ctx->argv, &ctx->list1, lookup_done, ctx);
    if (rc != OPAL_SUCCESS)
        unpublish ? op_done(rc, ctx) : lookup_done(rc, nullptr, ctx);
    return true;
}

void spawn_done(int status, opal_jobid_t jobid, void* cbdata) {
    std::unique_ptr<OpCtx> ctx(static_cast<OpCtx*>(cbdata));
    reply(ctx->token, status, core::encode_u32(jobid));
}

bool on_spawn(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_spawn(payload);
    if (!b)
        return false;
    auto* ctx = new_ctx(c, req);
    append_values(&ctx->list1, b->job_info);
    for (const core::App& a : b->apps) {
        auto* app = OBJ_NEW(opal_pmix_app_t);
        app->cmd = strdup(a.cmd.c_str());
        app->argv = to_argv(a.argv);
        app->env = to_argv(a.env);
        app->cwd = a.cwd.empty() ? nullptr : strdup(a.cwd.c_str());
        app->maxprocs = a.maxprocs;
        append_values(&app->info, a.info);
        opal_list_append(&ctx->list2, &app->super);
    }
    const int rc = s.host.spawn == nullptr
                       ? OPAL_ERR_NOT_SUPPORTED
                       : s.host.spawn(&ctx->proc, &ctx->list1, &ctx->list2, spawn_done, ctx);
    if (rc != OPAL_SUCCESS)
        spawn_done(rc, OPAL_JOBID_INVALID, ctx);
    return true;
}

bool on_connect(Conn& c, std::uint32_t req, std::span<const std::uint8_t> payload) {
    Server& s = srv();
    auto b = core::decode_fence(payload);
    if (!b)
        return false;
    auto* ctx = new_ctx(c, req);
    append_names(&ctx->list1, core::canonical(std::move(b->procs)));
    append_values(&ctx->list2, b->info);
    const int rc = s.host.connect == nullptr
                       ? OPAL_ERR_NOT_SUPPORTED
                       : s.host.connect(&ctx->list1, &ctx->list2, op_done, ctx);
    if (rc != OPAL_SUCCESS)
        op_done(rc, ctx);
    return true;
}

}  // namespace

bool handle(Conn& c, const core::FrameReader::Message& m) {
    using core::MsgType;
    const auto& p = m.payload;
    const std::uint32_t req = m.header.req;
    if (!c.identified) {
        if (m.header.type == MsgType::Hello)
            return on_hello(c, req, p);
        ++srv().counters.refused;
        logf(state().log, LogLevel::Warn, "refused a connection: request before hello");
        return false;
    }
    bool ok = false;
    switch (m.header.type) {
        case MsgType::Commit:
            ok = on_commit(c, p);
            break;
        case MsgType::Fence:
            ok = on_fence(c, req, p);
            break;
        case MsgType::Get:
            ok = on_get(c, req, p);
            break;
        case MsgType::JobData:
            ok = on_jobdata(c, req, p);
            break;
        case MsgType::Abort:
            ok = on_abort(c, req, p);
            break;
        case MsgType::Finalize:
            ok = p.empty() && on_finalize(c, req);
            break;
        case MsgType::Publish:
            ok = on_publish(c, req, p);
            break;
        case MsgType::Lookup:
            ok = on_lookup(c, req, p, false);
            break;
        case MsgType::Unpublish:
            ok = on_lookup(c, req, p, true);
            break;
        case MsgType::Spawn:
            ok = on_spawn(c, req, p);
            break;
        case MsgType::Connect:
            ok = on_connect(c, req, p);
            break;
        default:
            ok = false;  // Hello twice, or a server-to-client type
    }
    if (!ok) {
        ++srv().counters.bad_messages;
        logf(state().log, LogLevel::Warn, "closing %u.%u's connection: bad message of type %u",
             c.proc.jobid, c.proc.vpid, static_cast<unsigned>(m.header.type));
    }
    return ok;
}

void fail_fence(const core::Fence& f, int status) {
    ++srv().counters.failed_fences;
    for (const core::FenceWaiter& w : f.arrived)
        reply(w.token, status);
}

void client_lost(ProcName proc) {
    Server& s = srv();
    if (core::Client* c = s.reg.client(proc); c != nullptr)
        c->connected = false;
    logf(state().log, LogLevel::Info, "client %u.%u went away without finalizing", proc.jobid,
         proc.vpid);
    for (const core::Fence& f : s.fences.member_lost(proc))
        fail_fence(f, OPAL_ERR_COMM_FAILURE);
}

void release_commit_waiters(const core::Client& c) {
    Server& s = srv();
    for (const std::uint64_t t : s.commit_waits.take(c.proc)) {
        if (!is_host_token(t)) {
            reply(t, OPAL_SUCCESS, one_record(c.proc, c.local));
            continue;
        }
        if (const auto w = take_host_wait(t))
            answer_host(*w, c);
    }
}

void expire_waits() {
    Server& s = srv();
    const std::uint64_t now = now_seconds();
    auto expired = s.commit_waits.expire(now);
    for (auto& e : s.dmodex_waits.expire(now))
        expired.push_back(std::move(e));
    for (const auto& [proc, tokens] : expired) {
        for (const std::uint64_t t : tokens) {
            ++s.counters.timeouts;
            if (!is_host_token(t)) {
                reply(t, OPAL_ERR_TIMEOUT);
                continue;
            }
            if (const auto w = take_host_wait(t))
                w->cb(OPAL_ERR_TIMEOUT, nullptr, 0, w->cbdata, nullptr, nullptr);
        }
    }
}

int park_host_request(const core::Client& c, opal_pmix_modex_cbfunc_t cb, void* cbdata) {
    Server& s = srv();
    if (c.committed) {
        answer_host({cb, cbdata}, c);
        return OPAL_SUCCESS;
    }
    const std::uint64_t token = s.next_host_token++;
    if (!s.commit_waits.add(c.proc, token, now_seconds() + state().params.get_timeout_s))
        return OPAL_ERR_OUT_OF_RESOURCE;
    s.host_waits.emplace(token, HostWait{cb, cbdata});
    return OPAL_SUCCESS;
}

}  // namespace plugin::pmix::mca::server
