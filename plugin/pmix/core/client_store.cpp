#include "client_store.hpp"

namespace plugin::pmix::core {

void ClientStore::put(ProcName proc, KeyValue kv) {
    data_[proc].insert_or_assign(std::move(kv.key), std::move(kv.value));
}

void ClientStore::ingest(const Record& rec, bool complete) {
    auto& m = data_[rec.proc];
    for (const KeyValue& kv : rec.values)
        m.insert_or_assign(kv.key, kv.value);
    if (complete)
        complete_.insert(rec.proc);
}

const Value* ClientStore::find(ProcName proc, std::string_view key) const {
    for (const ProcName p : {proc, ProcName{proc.jobid, kRankWildcard}}) {
        auto it = data_.find(p);
        if (it == data_.end())
            continue;
        auto kv = it->second.find(key);
        if (kv != it->second.end())
            return &kv->second;
    }
    return nullptr;
}

GetAction ClientStore::miss(ProcName proc, bool optional) const {
    if (optional)
        return GetAction::NotFound;
    if (proc.vpid == kRankWildcard)
        return jobs_.contains(proc.jobid) ? GetAction::NotFound : GetAction::AskServer;
    if (complete_.contains(proc))
        return GetAction::NotFound;
    return GetAction::AskServer;
}

}  // namespace plugin::pmix::core
