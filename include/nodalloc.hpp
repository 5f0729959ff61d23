// SPDX-License-Identifier: MIT
// nodalloc for C++17: memory resources and STL allocators with placement.
//
//   nd::memory_resource on1 = nd::memory_resource::on_node(1);
//   std::pmr::vector<int> v(&on1);                 // elements on node 1
//   std::vector<int, nd::allocator<int>> w(nd::allocator<int>(nd::placement::on_node(0)));
//   nd::scoped_policy p("interleave:all@2M");      // this thread, until scope end
//   auto q = nd::make_unique_on_node<Big>(1, args...);
//
// Everything goes through the C API of nodalloc.h, so the library's
// guarantees hold: memory stays on the node it was placed on (also after
// the container frees and reallocates), fallback follows the node's list
// unless the placement binds, and nd_node_of() tells where a block lives.
// Header-only; link -lnodalloc.
#ifndef NODALLOC_HPP
#define NODALLOC_HPP

#if __cplusplus < 201703L
#error "nodalloc.hpp needs C++17"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "nodalloc.h"

namespace nd {

// Thrown for a placement that nodalloc refuses (bad node, bad policy text).
class placement_error : public std::invalid_argument {
public:
	using std::invalid_argument::invalid_argument;
};

// Where memory goes: a node, the caller's memory node, or a policy (bind,
// preferred, interleave with a granularity, weighted, ...). A small value
// type: a policy is held as its prepared copy (nd_policy_prepare).
class placement {
public:
	enum class kind { current, local, node, policy };

	// The thread's policy in force (what plain malloc does).
	placement() noexcept = default;
	static placement current() noexcept { return placement(); }
	// The calling CPU's memory node at allocation time.
	static placement local() noexcept
	{
		placement p;
		p.kind_ = kind::local;
		return p;
	}
	// One node; falls back along its fallback list when it is full.
	static placement on_node(int node)
	{
		if (node < 0 || node >= nd_node_limit() || !nd_node_online(node))
			throw placement_error("nodalloc: node " + std::to_string(node) + " does not exist");
		placement p;
		p.kind_ = kind::node;
		p.node_ = node;
		return p;
	}
	// A policy object (checked against the topology now).
	static placement with_policy(const nd_policy_t &pol)
	{
		char err[200];
		if (nd_policy_check(&pol, err, sizeof err) != 0)
			throw placement_error(std::string("nodalloc: ") + err);
		placement p;
		p.kind_ = kind::policy;
		p.pol_ = nd_policy_prepare(&pol); // immutable, lives as long as the process
		if (!p.pol_)
			throw std::bad_alloc();
		return p;
	}
	// The policy grammar of docs/policy.md: "bind:0-1", "interleave:all@2M".
	static placement with_policy(const char *text)
	{
		auto pol = std::make_unique<nd_policy_t>();
		char err[200];
		if (nd_policy_parse(text, pol.get(), err, sizeof err) != 0)
			throw placement_error(std::string("nodalloc: ") + err);
		return with_policy(*pol);
	}
	// Interleave over nodes, switching node every granularity bytes.
	static placement interleaved(const nd_nodemask_t &nodes, std::size_t granularity = 4096)
	{
		auto pol = std::make_unique<nd_policy_t>();
		std::memset(pol.get(), 0, sizeof *pol);
		pol->mode = ND_POLICY_INTERLEAVE;
		pol->nodes = nodes;
		unsigned shift = 0;
		while (shift < 18 && (std::size_t(4096) << shift) < granularity)
			shift++;
		pol->granularity_shift = shift;
		return with_policy(*pol);
	}

	kind which() const noexcept { return kind_; }
	int node() const noexcept { return node_; }
	const nd_policy_t *policy() const noexcept { return pol_; }

	// size bytes aligned to align (a power of two); nullptr on failure.
	// One call of nodalloc's fast paths, alignment included.
	void *allocate(std::size_t size, std::size_t align) const noexcept
	{
		unsigned flags = 0;
		if (align > alignof(std::max_align_t)) {
			if (align & (align - 1))
				return nullptr;
			flags = ND_MALLOCX_LG_ALIGN(static_cast<unsigned>(__builtin_ctzll(align)));
		}
		switch (kind_) {
		case kind::local:
			return nd_mallocx_onnode(size, ND_NODE_LOCAL, flags);
		case kind::node:
			return nd_mallocx_onnode(size, node_, flags);
		case kind::policy:
			return nd_mallocx_policy(size, pol_, flags);
		default:
			return nd_mallocx_policy(size, nullptr, flags);
		}
	}
	static void deallocate(void *p, std::size_t size, std::size_t align) noexcept
	{
		if (align > alignof(std::max_align_t))
			nd_free_aligned_sized(p, align, size);
		else
			nd_free_sized(p, size);
	}

	friend bool operator==(const placement &a, const placement &b) noexcept
	{
		if (a.kind_ != b.kind_)
			return false;
		switch (a.kind_) {
		case kind::node:
			return a.node_ == b.node_;
		case kind::policy:
			return a.pol_ == b.pol_; // prepared: equal policies share one copy
		default:
			return true;
		}
	}
	friend bool operator!=(const placement &a, const placement &b) noexcept { return !(a == b); }

private:
	kind kind_ = kind::current;
	int node_ = -1;
	const nd_policy_t *pol_ = nullptr; // from nd_policy_prepare: copies share it
};

// A std::pmr::memory_resource that places every block. Blocks of any
// resource may be freed by any other (they are nodalloc blocks), but pmr
// containers compare resources: two are equal when they place alike.
class memory_resource : public std::pmr::memory_resource {
public:
	explicit memory_resource(placement p = placement()) : where_(std::move(p)) {}
	static memory_resource on_node(int node) { return memory_resource(placement::on_node(node)); }
	static memory_resource local() { return memory_resource(placement::local()); }
	static memory_resource with_policy(const char *text) { return memory_resource(placement::with_policy(text)); }
	static memory_resource with_policy(const nd_policy_t &p) { return memory_resource(placement::with_policy(p)); }
	static memory_resource interleaved(const nd_nodemask_t &nodes, std::size_t granularity = 4096)
	{
		return memory_resource(placement::interleaved(nodes, granularity));
	}
	const placement &where() const noexcept { return where_; }

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		void *p = where_.allocate(bytes ? bytes : 1, align);
		if (!p)
			throw std::bad_alloc();
		return p;
	}
	void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
	{
		placement::deallocate(p, bytes ? bytes : 1, align);
	}
	bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
	{
		auto *r = dynamic_cast<const memory_resource *>(&o);
		return r && r->where_ == where_;
	}

private:
	placement where_;
};

// A heap of one node or policy (nd_heap_t, nodalloc.h): owned, destroyed
// with every block still in it when the object goes. The creating thread
// allocates; any thread may free its blocks (nodalloc.h says the rest).
class heap {
public:
	explicit heap(int node) : h_(nd_heap_new(node))
	{
		if (!h_)
			throw placement_error("nodalloc: no heap on node " + std::to_string(node));
	}
	explicit heap(const nd_policy_t &p) : h_(nd_heap_new_policy(&p))
	{
		if (!h_)
			throw placement_error("nodalloc: no heap for this policy");
	}
	~heap() { nd_heap_destroy(h_); }
	heap(const heap &) = delete;
	heap &operator=(const heap &) = delete;
	nd_heap_t *get() const noexcept { return h_; }
	void *allocate(std::size_t size, std::size_t align) const noexcept
	{
		return align > alignof(std::max_align_t) ? nd_heap_aligned_alloc(h_, align, size) : nd_heap_malloc(h_, size);
	}

private:
	nd_heap_t *h_;
};

// A std::pmr::memory_resource over a heap (which must outlive it): the
// container's blocks are the heap's, freed one by one or all at once by
// the heap's destruction (then release the container first: it must not
// free them again).
class heap_resource : public std::pmr::memory_resource {
public:
	explicit heap_resource(heap &h) noexcept : h_(&h) {}
	heap &get() const noexcept { return *h_; }

protected:
	void *do_allocate(std::size_t bytes, std::size_t align) override
	{
		void *p = h_->allocate(bytes ? bytes : 1, align);
		if (!p)
			throw std::bad_alloc();
		return p;
	}
	void do_deallocate(void *p, std::size_t, std::size_t) override { nd_free(p); }
	bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
	{
		auto *r = dynamic_cast<const heap_resource *>(&o);
		return r && r->h_ == h_;
	}

private:
	heap *h_;
};

// An STL allocator (std::vector<T, nd::allocator<T>>, node-based
// containers through rebind) carrying its placement.
template <class T>
class allocator {
public:
	using value_type = T;
	using propagate_on_container_copy_assignment = std::true_type;
	using propagate_on_container_move_assignment = std::true_type;
	using propagate_on_container_swap = std::true_type;

	allocator() noexcept = default;
	explicit allocator(placement p) noexcept : where_(std::move(p)) {}
	template <class U>
	allocator(const allocator<U> &o) noexcept : where_(o.where()) {}

	T *allocate(std::size_t n)
	{
		if (n > std::size_t(-1) / sizeof(T))
			throw std::bad_array_new_length();
		std::size_t bytes = n * sizeof(T);
		void *p = where_.allocate(bytes != 0 ? bytes : 1, alignof(T));
		if (!p)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, std::size_t n) noexcept { placement::deallocate(p, n ? n * sizeof(T) : 1, alignof(T)); }
	const placement &where() const noexcept { return where_; }

	template <class U>
	friend bool operator==(const allocator &a, const allocator<U> &b) noexcept { return a.where() == b.where(); }
	template <class U>
	friend bool operator!=(const allocator &a, const allocator<U> &b) noexcept { return !(a.where() == b.where()); }

private:
	placement where_;
};

// The calling thread's policy for the lifetime of the object (plain
// malloc and new follow it too); the previous thread policy comes back.
class scoped_policy {
public:
	explicit scoped_policy(const nd_policy_t &p) : old_(std::make_unique<nd_policy_t>())
	{
		nd_get_policy(old_.get());
		if (nd_set_policy(&p) != 0)
			throw placement_error("nodalloc: policy refused by nd_set_policy");
	}
	explicit scoped_policy(const char *text) : old_(std::make_unique<nd_policy_t>())
	{
		auto p = std::make_unique<nd_policy_t>();
		char err[200];
		if (nd_policy_parse(text, p.get(), err, sizeof err) != 0)
			throw placement_error(std::string("nodalloc: ") + err);
		nd_get_policy(old_.get());
		if (nd_set_policy(p.get()) != 0)
			throw placement_error(std::string("nodalloc: policy refused: ") + text);
	}
	~scoped_policy() { nd_set_policy(old_.get()); }
	scoped_policy(const scoped_policy &) = delete;
	scoped_policy &operator=(const scoped_policy &) = delete;

private:
	std::unique_ptr<nd_policy_t> old_;
};

// unique_ptr deleter for objects made with make_unique_at.
template <class T>
struct deleter {
	void operator()(T *p) const noexcept
	{
		if (p) {
			p->~T();
			placement::deallocate(p, sizeof(T), alignof(T));
		}
	}
};
template <class T>
using unique_ptr = std::unique_ptr<T, deleter<T>>;

template <class T, class... Args>
unique_ptr<T> make_unique_at(const placement &where, Args &&...args)
{
	void *m = where.allocate(sizeof(T), alignof(T));
	if (!m)
		throw std::bad_alloc();
	try {
		return unique_ptr<T>(new (m) T(std::forward<Args>(args)...));
	} catch (...) {
		placement::deallocate(m, sizeof(T), alignof(T));
		throw;
	}
}
template <class T, class... Args>
unique_ptr<T> make_unique_on_node(int node, Args &&...args)
{
	return make_unique_at<T>(placement::on_node(node), std::forward<Args>(args)...);
}

} // namespace nd

#endif // NODALLOC_HPP
