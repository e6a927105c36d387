#include "registry.hpp"

#include <algorithm>

namespace plugin::pmix::core {

using plugin::common::fail;

namespace {

std::uint32_t rank_of(const Value& v) {
    if (v.shape == Shape::Name)
        return v.name.vpid;
    if (v.shape == Shape::Scalar)
        return static_cast<std::uint32_t>(v.bits);
    return kRankInvalid;
}

}  // namespace

std::vector<Record> job_records(std::uint32_t jobid, const KvList& info, std::string_view pdata_key,
                                std::string_view rank_key) {
    std::vector<Record> out(1);
    out[0].proc = {jobid, kRankWildcard};
    for (const KeyValue& kv : info) {
        if (kv.key != pdata_key || kv.value.shape != Shape::List) {
            out[0].values.push_back(kv);
            continue;
        }
        const Value* rank = find_key(kv.value.list, rank_key);
        if (rank == nullptr || rank_of(*rank) >= kRankWildcard)
            continue;  // a process entry without a usable rank says nothing
        Record rec;
        rec.proc = {jobid, rank_of(*rank)};
        rec.values = kv.value.list;
        out.push_back(std::move(rec));
    }
    return out;
}

void merge(KvList& into, const KvList& add) {
    for (const KeyValue& kv : add) {
        auto it = std::find_if(into.begin(), into.end(),
                               [&](const KeyValue& x) { return x.key == kv.key; });
        if (it != into.end())
            *it = kv;
        else
            into.push_back(kv);
    }
}

void Registry::add_job(std::uint32_t jobid, std::uint32_t nlocal, std::vector<Record> records) {
    Job& j = jobs_[jobid];
    j.nlocal = nlocal;
    j.records = std::move(records);
}

void Registry::remove_job(std::uint32_t jobid) {
    jobs_.erase(jobid);
    std::erase_if(clients_, [&](const auto& kv) { return kv.first.jobid == jobid; });
}

const Job* Registry::job(std::uint32_t jobid) const {
    auto it = jobs_.find(jobid);
    return it == jobs_.end() ? nullptr : &it->second;
}

Client& Registry::add_client(ProcName proc, std::uint32_t uid, std::uint32_t gid,
                             void* host_object) {
    Client& c = clients_[proc];
    c.proc = proc;
    c.uid = uid;
    c.gid = gid;
    c.host_object = host_object;
    return c;
}

void Registry::remove_client(ProcName proc) {
    clients_.erase(proc);
}

Client* Registry::client(ProcName proc) {
    auto it = clients_.find(proc);
    return it == clients_.end() ? nullptr : &it->second;
}

const Client* Registry::client(ProcName proc) const {
    auto it = clients_.find(proc);
    return it == clients_.end() ? nullptr : &it->second;
}

Result<Client*> Registry::authenticate(ProcName proc, std::uint64_t secret) {
    Client* c = client(proc);
    if (c == nullptr || job(proc.jobid) == nullptr)
        return fail(ErrorCode::UnknownPeer, "not a registered client");
    if (c->secret == 0 || c->secret != secret)
        return fail(ErrorCode::InvalidArgument, "wrong secret");
    if (c->connected)
        return fail(ErrorCode::Duplicate, "already connected");
    return c;
}

void Registry::commit(Client& c, const KvList& values) {
    KvList local;
    KvList remote;
    for (const KeyValue& kv : values) {
        if (kv.scope != Scope::Remote)
            local.push_back(kv);
        if (kv.scope != Scope::Local)
            remote.push_back(kv);
    }
    merge(c.local, local);
    merge(c.remote, remote);
    c.committed = true;
}

std::vector<ProcName> Registry::local_members(std::span<const ProcName> procs) const {
    std::vector<ProcName> out;
    for (const ProcName& p : procs) {
        if (p.vpid == kRankWildcard) {
            for (auto it = clients_.lower_bound({p.jobid, 0});
                 it != clients_.end() && it->first.jobid == p.jobid; ++it)
                out.push_back(it->first);
        } else if (clients_.contains(p)) {
            out.push_back(p);
        }
    }
    return canonical(std::move(out));
}

}  // namespace plugin::pmix::core
