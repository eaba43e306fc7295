//! A Redis Cluster of a test's own on loopback (`REDIS_SERVER`: Valkey in `make test`'s cluster
//! pass), built with the cluster commands themselves: each master given a third of the slots,
//! the nodes met, a replica per master when asked. And what a cluster's operator does to it: a
//! slot moved to another master the way `redis-cli --cluster reshard` moves it, a primary
//! killed, a replica promoted.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

/// `MIGRATE`'s own timeout, in milliseconds.
const MIGRATE_TIMEOUT_MS: u64 = 5_000;

/// How long the test's own admin commands are waited for: longer than `MIGRATE`'s own timeout.
const ADMIN_RESPONSE_TIMEOUT: Duration = Duration::from_secs(15);

/// One node of the cluster: its process, port and id.
pub struct Node {
    pub port: u16,
    /// The cluster bus's port (`--cluster-port`), which `CLUSTER MEET` needs.
    bus: u16,
    pub id: String,
    /// Where its `nodes-<port>.conf` lives: a restarted node rejoins the cluster from it.
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    /// Starts the process (again, after [`Node::kill`]: it rejoins as its `nodes.conf` says, a
    /// replica of whichever primary took its slots meanwhile).
    pub fn spawn(&mut self) {
        let server = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let (port, bus) = (self.port.to_string(), self.bus.to_string());
        let mut child = Command::new(server)
            .args(["--bind", "127.0.0.1", "--port", &port, "--cluster-port", &bus])
            .args(["--cluster-enabled", "yes", "--cluster-config-file", &format!("nodes-{port}.conf")])
            .args(["--cluster-node-timeout", "1000", "--save", "", "--appendonly", "no"])
            .args(["--maxmemory-policy", "noeviction", "--cluster-allow-replica-migration", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (make test installs it)");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                self.child = Some(child);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("redis-server did not start on {port}");
    }

    /// Whether the process runs.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// A connection to this node alone (no redirects followed), for the test's own admin commands.
    /// It waits as long as those may take on a busy machine: a `MIGRATE` may take up to its own
    /// timeout, far past the client's default 500 ms response timeout.
    pub async fn connection(&self) -> MultiplexedConnection {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port)).unwrap();
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(ADMIN_RESPONSE_TIMEOUT));
        client.get_multiplexed_async_connection_with_config(&config).await.expect("the node answers")
    }

    /// Kills the process (SIGKILL: no goodbye, like a failed host).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

/// How a slot's keys go from one master to another while it migrates.
#[derive(Debug, Clone, Copy)]
pub enum Migration {
    /// `window` of `ASK` (the slot migrating, no key moved), every key in one `MIGRATE`, then
    /// `window` again before the slot is handed over.
    Whole { window: Duration },
    /// One key a `MIGRATE`, `gap` apart: the packet's keys are split between two nodes meanwhile.
    KeyByKey { gap: Duration },
}

/// When a slot's keys were split between two masters, if ever.
#[derive(Debug, Clone, Copy)]
pub struct Moved {
    pub split: Option<(Instant, Instant)>,
}

/// A cluster of `masters` masters, each with `replicas` replicas, on free loopback ports.
pub struct OwnCluster {
    pub masters: Vec<Node>,
    /// Master `n`'s replicas at the start are `replicas[n * per_master..(n + 1) * per_master]`.
    pub replicas: Vec<Node>,
    dir: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn query<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, command: &redis::Cmd) -> T {
    command.query_async(conn).await.unwrap_or_else(|error| panic!("{command:?}: {error}"))
}

impl OwnCluster {
    pub async fn start(masters: usize, per_master: usize) -> OwnCluster {
        let dir = std::env::temp_dir().join(format!("red-packets-cluster-{}", free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let spawn = |dir: &PathBuf| {
            let mut node =
                Node { port: free_port(), bus: free_port(), id: String::new(), dir: dir.clone(), child: None };
            node.spawn();
            node
        };
        let mut cluster = OwnCluster {
            masters: (0..masters).map(|_| spawn(&dir)).collect(),
            replicas: (0..masters * per_master).map(|_| spawn(&dir)).collect(),
            dir,
        };
        for node in cluster.masters.iter_mut().chain(cluster.replicas.iter_mut()) {
            node.id = query(&mut node.connection().await, redis::cmd("CLUSTER").arg("MYID")).await;
        }
        let slots_each = 16_384 / masters;
        for (n, node) in cluster.masters.iter().enumerate() {
            let last = if n + 1 == masters { 16_383 } else { (n + 1) * slots_each - 1 };
            let mut conn = node.connection().await;
            let _: () =
                query(&mut conn, redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(n * slots_each).arg(last)).await;
        }
        let mut first = cluster.masters[0].connection().await;
        for node in cluster.masters.iter().chain(&cluster.replicas).skip(1) {
            let mut meet = redis::cmd("CLUSTER");
            meet.arg("MEET").arg("127.0.0.1").arg(node.port).arg(node.bus);
            let _: () = query(&mut first, &meet).await;
        }
        let everyone = cluster.masters.len() + cluster.replicas.len();
        cluster
            .wait_until("every node knows every other", |info, _| {
                info.contains(&format!("cluster_known_nodes:{everyone}"))
            })
            .await;
        for (n, replica) in cluster.replicas.iter().enumerate() {
            let master = &cluster.masters[n / per_master];
            let mut conn = replica.connection().await;
            let _: () = query(&mut conn, redis::cmd("CLUSTER").arg("REPLICATE").arg(&master.id)).await;
        }
        cluster.wait_until("the cluster is ok", |info, _| info.contains("cluster_state:ok")).await;
        for replica in &cluster.replicas {
            let mut conn = replica.connection().await;
            for attempt in 0.. {
                let info: String = query(&mut conn, redis::cmd("INFO").arg("replication")).await;
                if info.contains("master_link_status:up") {
                    break;
                }
                assert!(attempt < 200, "replica {} never linked to its master: {info}", replica.port);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        cluster
    }

    /// The seed URL a client is given (`REDIS_URL`).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.masters[0].port)
    }

    /// Waits (up to 20 s) until `ready(CLUSTER INFO, node)` holds on every running node.
    pub async fn wait_until(&self, what: &str, ready: impl Fn(&str, &Node) -> bool) {
        for node in self.masters.iter().chain(&self.replicas).filter(|node| node.child.is_some()) {
            let mut conn = node.connection().await;
            let mut waited = 0;
            loop {
                let info: String = query(&mut conn, redis::cmd("CLUSTER").arg("INFO")).await;
                if ready(&info, node) {
                    break;
                }
                assert!(waited < 400, "{what}: not on node {}: {info}", node.port);
                waited += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    /// The slot `key` hashes to.
    pub async fn slot_of(&self, key: &str) -> u16 {
        let node = self.masters.iter().find(|node| node.child.is_some()).expect("a running master");
        query(&mut node.connection().await, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await
    }

    /// The running master that serves `slot` now, by its own view.
    pub async fn owner_of(&self, slot: u16) -> usize {
        for (n, node) in self.masters.iter().enumerate().filter(|(_, node)| node.child.is_some()) {
            let nodes: String = query(&mut node.connection().await, redis::cmd("CLUSTER").arg("NODES")).await;
            if serves(nodes.lines().find(|line| line.contains("myself")).unwrap(), slot) {
                return n;
            }
        }
        panic!("no running master serves slot {slot}");
    }

    /// Moves `slot` from the master serving it to the next one, keys and all: [`Self::move_slots`].
    pub async fn move_slot(&self, slot: u16, how: Migration) -> Moved {
        let from = self.owner_of(slot).await;
        self.move_slots(&[slot], from, (from + 1) % self.masters.len(), how).await.remove(0)
    }

    /// Moves `slots` from master `from` to master `to`, one after another, as
    /// `redis-cli --cluster reshard` does: `IMPORTING` on the target, `MIGRATING` on the source,
    /// the keys `MIGRATE`d as `how` says, then `SETSLOT … NODE` on the target, the source and the
    /// others.
    pub async fn move_slots(&self, slots: &[u16], from: usize, to: usize, how: Migration) -> Vec<Moved> {
        let (source, target) = (&self.masters[from], &self.masters[to]);
        let (mut source_conn, mut target_conn) = (source.connection().await, target.connection().await);
        let mut others = Vec::new();
        for (_, node) in self.masters.iter().enumerate().filter(|(n, node)| *n != from && *n != to && node.running()) {
            others.push(node.connection().await);
        }
        let mut moved = Vec::new();
        for &slot in slots {
            let setslot =
                |state: &str, id: &str| redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg(state).arg(id).clone();
            let _: () = query(&mut target_conn, &setslot("IMPORTING", &source.id)).await;
            let _: () = query(&mut source_conn, &setslot("MIGRATING", &target.id)).await;
            let mut split = None;
            if let Migration::Whole { window } = how {
                tokio::time::sleep(window).await;
            }
            loop {
                let keys: Vec<String> =
                    query(&mut source_conn, redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(1_000)).await;
                if keys.is_empty() {
                    break;
                }
                let batches: Vec<Vec<String>> = match how {
                    Migration::Whole { .. } => vec![keys],
                    Migration::KeyByKey { .. } => keys.into_iter().map(|key| vec![key]).collect(),
                };
                for batch in batches {
                    let mut migrate = redis::cmd("MIGRATE");
                    migrate
                        .arg("127.0.0.1")
                        .arg(target.port)
                        .arg("")
                        .arg(0)
                        .arg(MIGRATE_TIMEOUT_MS)
                        .arg("KEYS")
                        .arg(&batch);
                    let _: String = query(&mut source_conn, &migrate).await;
                    if let Migration::KeyByKey { gap } = how {
                        let now = Instant::now();
                        split = Some((split.map_or(now, |(first, _)| first), now));
                        tokio::time::sleep(gap).await;
                    }
                }
            }
            if let Migration::Whole { window } = how {
                tokio::time::sleep(window).await;
            }
            let _: () = query(&mut target_conn, &setslot("NODE", &target.id)).await;
            let _: () = query(&mut source_conn, &setslot("NODE", &target.id)).await;
            for conn in &mut others {
                let _: () = query(conn, &setslot("NODE", &target.id)).await;
            }
            moved.push(Moved { split });
        }
        moved
    }

    /// The port of the running node that serves `slot` as a primary now, by its own view (a
    /// promoted replica among them); none while no running node does.
    pub async fn primary_of(&self, slot: u16) -> Option<u16> {
        for node in self.masters.iter().chain(&self.replicas).filter(|node| node.running()) {
            let nodes: String = query(&mut node.connection().await, redis::cmd("CLUSTER").arg("NODES")).await;
            let own = nodes.lines().find(|line| line.contains("myself")).unwrap();
            if own.split(' ').nth(2).is_some_and(|flags| flags.contains("master")) && serves(own, slot) {
                return Some(node.port);
            }
        }
        None
    }

    /// Once the primary on `killed` is dead: only its replicas holding the most of its writes may
    /// take over (`cluster-replica-no-failover` on the others, off on them), as a managed failover
    /// promotes the replica of least lag. The cluster still detects the failure and elects on its
    /// own; what it may not do is what an election on stale gossip does on a busy machine:
    /// promote the replica behind, losing what `WAIT` had the other acknowledge, then answer
    /// grabs 503 while the one ahead resyncs from scratch. Returns each replica's offset.
    pub async fn only_the_freshest_replicas_may_take_over(&self, killed: u16) -> Vec<(u16, u64)> {
        let mut offsets = Vec::new();
        for node in self.masters.iter().chain(&self.replicas).filter(|node| node.running()) {
            let info: String = query(&mut node.connection().await, redis::cmd("INFO").arg("replication")).await;
            let field =
                |name: &str| info.lines().find_map(|line| line.strip_prefix(name)).map(|value| value.trim().to_owned());
            if field("role:").as_deref() == Some("slave") && field("master_port:") == Some(killed.to_string()) {
                let offset = field("master_repl_offset:").and_then(|offset| offset.parse().ok()).unwrap_or(0);
                offsets.push((node.port, offset));
            }
        }
        let freshest = offsets.iter().map(|&(_, offset)| offset).max().unwrap_or(0);
        for &(port, offset) in &offsets {
            let node = self.masters.iter().chain(&self.replicas).find(|node| node.port == port).unwrap();
            let excluded = if offset < freshest { "yes" } else { "no" };
            let mut set = redis::cmd("CONFIG");
            set.arg("SET").arg("cluster-replica-no-failover").arg(excluded);
            let _: () = query(&mut node.connection().await, &set).await;
        }
        offsets
    }

    /// Whether the running node on `port` is a primary with a replica online (synced, so it
    /// acknowledges `WAIT`).
    pub async fn has_a_replica_online(&self, port: u16) -> bool {
        let node = self.masters.iter().chain(&self.replicas).find(|node| node.port == port).unwrap();
        let info: String = query(&mut node.connection().await, redis::cmd("INFO").arg("replication")).await;
        info.contains("role:master")
            && info.lines().any(|line| line.starts_with("slave") && line.contains("state=online"))
    }

    /// The node on `port`, master or replica.
    pub fn node_mut(&mut self, port: u16) -> &mut Node {
        self.masters
            .iter_mut()
            .chain(self.replicas.iter_mut())
            .find(|node| node.port == port)
            .expect("a node of the cluster")
    }
}

/// Whether a `CLUSTER NODES` line lists `slot` among its node's slots.
fn serves(line: &str, slot: u16) -> bool {
    line.split(' ').skip(8).any(|range| match range.split_once('-') {
        Some((first, last)) => {
            first.parse::<u16>().is_ok_and(|first| first <= slot) && last.parse::<u16>().is_ok_and(|last| slot <= last)
        }
        None => range.parse::<u16>() == Ok(slot),
    })
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        for node in self.masters.iter_mut().chain(self.replicas.iter_mut()) {
            node.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
