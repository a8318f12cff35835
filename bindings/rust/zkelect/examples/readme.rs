use std::time::Duration;

fn main() -> Result<(), zkelect::Error> {
    let hosts = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:2181".into());
    let client = zkelect::Client::connect(&hosts)?;
    let election = client.election("/demo/scheduler", "worker-1")?;
    election.volunteer()?;
    election.await_leader(Duration::from_secs(30))?;
    println!("leading with fencing token {}", election.fencing_token()?);
    Ok(())
}
